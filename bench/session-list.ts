/**
 * Target: GET /api/v1/sessions?limit=100 on an organization with 1,000,000 sessions has a median under 5 ms, and is
 * no more than 2x slower than with 1,000 sessions (the baseline). Deep pages, reached with before=nextCursor, should
 * be as fast as the pages at the top: both walks read pages that no request has touched yet.
 *
 * The sessions are written straight into the engine's SQLite file through a second connection (WAL allows it), in
 * the owner's Personal organization, while the engine runs in its own process.
 */
import Database from 'better-sqlite3';
import { randomUUID } from 'node:crypto';
import { statSync } from 'node:fs';
import { join } from 'node:path';
import { DB_FILE } from '../src/main/engine/store/db.js';
import { onCleanup, tempDir } from './support/cleanup.js';
import { detail, fmtMs, fmtRatio, median, percentile, type Benchmark } from './support/report.js';
import { OWNER, REQUEST_TIMEOUT_MS, ownerApiKey, startEngine } from './support/servers.js';
import { sized } from './support/smoke.js';

const SMALL = sized(1_000, 200);
const LARGE = sized(1_000_000, 2_000);
const PAGE = 100;
const WARMUP_REQUESTS = sized(30, 0);
const REQUESTS = sized(300, 1);
const DEEP_START = sized(900_000, 1_800);
const WALK_PAGES = sized(50, 1);
const WALK_WARMUP_PAGES = sized(10, 0);
/** No loop runs longer than this, whatever its count. */
const LOOP_BUDGET_MS = 30_000;
const SPACING_MS = 1000;
const SEED_BATCH = 1_000;
const TARGET_MEDIAN_MS = 5;
const TARGET_RATIO = 2;

interface Page {
  data: { createdAt: string }[];
  nextCursor?: string;
}

async function timedPage(url: string, apiKey: string): Promise<{ ms: number; page: Page }> {
  const start = performance.now();
  const res = await fetch(url, { headers: { authorization: `Bearer ${apiKey}` }, signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS) });
  const text = await res.text();
  const ms = performance.now() - start;
  if (res.status !== 200) throw new Error(`GET ${url} answered ${res.status}: ${text}`);
  const page = JSON.parse(text) as Page;
  if (page.data.length !== PAGE || !page.nextCursor) throw new Error(`GET ${url}: expected a full page with a nextCursor`);
  return { ms, page };
}

/** Sequential requests for the first page: a few to warm up, then `count` timed ones. */
async function firstPageLatencies(api: string, apiKey: string, count: number): Promise<number[]> {
  const url = `${api}/sessions?limit=${PAGE}`;
  const deadline = performance.now() + LOOP_BUDGET_MS;
  for (let i = 0; i < WARMUP_REQUESTS && performance.now() < deadline; i++) await timedPage(url, apiKey);
  const samples: number[] = [];
  while (samples.length < count && performance.now() < deadline) samples.push((await timedPage(url, apiKey)).ms);
  return samples;
}

/** Follows nextCursor from `before`, timing each page, and checks that the pages neither overlap nor skip. */
async function pageFrom(api: string, apiKey: string, before: string, pages: number): Promise<number[]> {
  const deadline = performance.now() + LOOP_BUDGET_MS;
  const samples: number[] = [];
  let cursor = before;
  while (samples.length < pages && performance.now() < deadline) {
    const { ms, page } = await timedPage(`${api}/sessions?limit=${PAGE}&before=${encodeURIComponent(cursor)}`, apiKey);
    const expectedFirst = Date.parse(cursor) - SPACING_MS;
    if (Date.parse(page.data[0]!.createdAt) !== expectedFirst) throw new Error(`the page after ${cursor} skipped or repeated a session`);
    samples.push(ms);
    cursor = page.nextCursor!;
  }
  return samples;
}

const summary = (xs: number[]) => `median ${fmtMs(median(xs))}, p95 ${fmtMs(percentile(xs, 95))} (${xs.length} requests)`;

export const sessionList: Benchmark = {
  name: 'session-list',
  title: `GET /api/v1/sessions?limit=${PAGE}, ${SMALL.toLocaleString('en-US')} vs ${LARGE.toLocaleString('en-US')} sessions, sequential requests`,
  async run() {
    const dataDir = tempDir('benchtop-bench-list-');
    const engine = await startEngine(dataDir);
    const apiKey = await ownerApiKey(engine.api);

    const db = new Database(join(dataDir, DB_FILE));
    onCleanup(() => {
      db.close();
    });
    // Seeding only: durability does not matter here, and a large cache keeps the random-id index inserts in memory.
    db.pragma('synchronous = OFF');
    db.pragma('cache_size = -1048576');
    const owner = db
      .prepare(`SELECT u.id AS userId, o.id AS orgId FROM users u JOIN organizations o ON o.personal_of = u.id WHERE u.email = ?`)
      .get(OWNER.email) as { userId: string; orgId: string };
    const newest = Date.now() - 60_000;
    const insert = db.prepare('INSERT INTO sessions (id, organization_id, created_by, created_at) VALUES (?, ?, ?, ?)');
    // Sessions number `from` to `to` counting back from the newest, inserted oldest first as the engine would have.
    // One transaction, opened by hand so that the event loop runs between small batches: an interrupt reaches the
    // cleanup (which rolls back and stops the engine) before tsx, which gives a busy child 60 ms, SIGKILLs us.
    const seed = async (from: number, to: number) => {
      const start = performance.now();
      db.exec('BEGIN');
      for (let i = to - 1; i >= from; i--) {
        insert.run(randomUUID(), owner.orgId, owner.userId, newest - i * SPACING_MS);
        if (i % SEED_BATCH === 0) await new Promise(setImmediate);
      }
      db.exec('COMMIT');
      const [checkpoint] = db.pragma('wal_checkpoint(TRUNCATE)') as { busy: number }[];
      const size = statSync(join(dataDir, DB_FILE)).size / 2 ** 20;
      detail(`seeded ${(to - from).toLocaleString('en-US')} sessions in ${fmtMs(performance.now() - start)}` +
        ` (one transaction; database ${size.toFixed(0)} MB; checkpoint ${checkpoint?.busy ? 'busy' : 'complete'})`);
    };

    await seed(0, SMALL);
    const small = await firstPageLatencies(engine.api, apiKey, REQUESTS);
    detail(`${SMALL.toLocaleString('en-US')} sessions, first page: ${summary(small)}`);

    await seed(SMALL, LARGE);
    const large = await firstPageLatencies(engine.api, apiKey, REQUESTS);
    detail(`${LARGE.toLocaleString('en-US')} sessions, first page: ${summary(large)}`);

    // The cursor that makes session number n (0 is the newest) the first item of a page.
    const cursorFor = (n: number) => new Date(newest - (n - 1) * SPACING_MS).toISOString();
    await pageFrom(engine.api, apiKey, cursorFor(LARGE / 2), WALK_WARMUP_PAGES);
    const top = await pageFrom(engine.api, apiKey, cursorFor(0), WALK_PAGES);
    detail(`${LARGE.toLocaleString('en-US')} sessions, ${top.length} pages from the newest on: ${summary(top)}`);
    const deep = await pageFrom(engine.api, apiKey, cursorFor(DEEP_START), WALK_PAGES);
    detail(`${LARGE.toLocaleString('en-US')} sessions, ${deep.length} pages from session ${DEEP_START.toLocaleString('en-US')} on: ${summary(deep)}`);
    await engine.child.stop();

    const [smallMedian, largeMedian, topMedian, deepMedian] = [median(small), median(large), median(top), median(deep)];
    return [
      {
        benchmark: this.name,
        figure: `GET /sessions?limit=${PAGE}, ${LARGE.toLocaleString('en-US')} sessions`,
        value: `median ${fmtMs(largeMedian)} (p95 ${fmtMs(percentile(large, 95))})`,
        baseline: `${SMALL.toLocaleString('en-US')} sessions: median ${fmtMs(smallMedian)}`,
        ratio: fmtRatio(largeMedian, smallMedian),
        target: `median < ${TARGET_MEDIAN_MS} ms and <= ${TARGET_RATIO.toFixed(2)}x`,
        met: largeMedian < TARGET_MEDIAN_MS && largeMedian / smallMedian <= TARGET_RATIO,
      },
      {
        benchmark: this.name,
        figure: `${WALK_PAGES} pages via nextCursor from #${DEEP_START.toLocaleString('en-US')}`,
        value: `median ${fmtMs(deepMedian)} (p95 ${fmtMs(percentile(deep, 95))})`,
        baseline: `${WALK_PAGES} pages from #0: median ${fmtMs(topMedian)}`,
        ratio: fmtRatio(deepMedian, topMedian),
        target: `as fast (<= ${TARGET_RATIO.toFixed(2)}x)`,
        met: deepMedian / topMedian <= TARGET_RATIO,
      },
    ];
  },
};
