/**
 * Target: from POST /sessions/{id}/devices to the first poll that shows the allocation in_use, on a simulated phone,
 * the engine adds less than 200 ms to the time its adb commands take. The baseline, measured in the same run on the
 * same phone, is the engine's own preparation (its AndroidDriver.prepare(): wake, dismiss the keyguard, HOME,
 * `pm list packages`) called directly through adbkit, as the engine calls it, with no engine around it.
 *
 * Each round times the direct preparation, then one allocation (POST, then the session's device list polled back to
 * back until in_use), then releases the phone and waits until its cleanup has finished, so that every preparation
 * starts from the same phone state: awake, unlocked, at HOME.
 *
 * The rounds run twice: on a fresh lab, then on a lab with a history, whose SQLite file holds 100,000 past
 * allocations (a CI lab's few months), each in its own session with its usage ledger entry. They are copies of a
 * real allocation of this run, written through a second connection (WAL allows it) while the engine runs.
 */
import Database from 'better-sqlite3';
import { randomUUID } from 'node:crypto';
import { statSync } from 'node:fs';
import { join } from 'node:path';
import { AndroidFleet } from '../src/main/engine/fleet/android/android-fleet.js';
import { DB_FILE } from '../src/main/engine/store/db.js';
import { allocateUntilInUse, releaseUntilFree, startAndroidLab, type AndroidLab } from './support/android-lab.js';
import { detail, fmtMs, fmtRatio, median, percentile, type Benchmark, type Figure } from './support/report.js';
import { call } from './support/servers.js';
import { sized } from './support/smoke.js';

const WARMUP_ROUNDS = sized(3, 0);
const ROUNDS = sized(20, 1);
const HISTORY = sized(100_000, 10);
const SEED_BATCH = 5_000;
/** No loop runs longer than this, whatever its count. */
const LOOP_BUDGET_MS = 60_000;
/** No single allocation, release or preparation may take longer. */
const STEP_TIMEOUT_MS = 10_000;
const TARGET_OVERHEAD_MS = 200;
/** The commands AndroidDriver.prepare() sends, for the adb command line comparison. */
const PREPARE_COMMANDS = ['input keyevent KEYCODE_WAKEUP', 'wm dismiss-keyguard', 'input keyevent KEYCODE_HOME', 'pm list packages'];

const summary = (xs: number[]) => `median ${fmtMs(median(xs))}, p95 ${fmtMs(percentile(xs, 95))}`;

async function timed(what: string, work: () => Promise<unknown>): Promise<number> {
  const start = performance.now();
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} took longer than ${STEP_TIMEOUT_MS} ms`)), STEP_TIMEOUT_MS);
  });
  try {
    await Promise.race([work(), timeout]);
  } finally {
    clearTimeout(timer);
  }
  return performance.now() - start;
}

/** Warm-up rounds, then the measured ones, with the figures they print. */
async function rounds(lab: AndroidLab, sessionId: string, label: string): Promise<{ api: number[]; direct: number[] }> {
  // The engine's Android client and driver, built as the engine builds them, but with nothing tracking devices.
  const driver = new AndroidFleet({ host: '127.0.0.1', port: lab.adb.port }, () => undefined).driver(lab.serial);
  const cli = async () => {
    for (const command of PREPARE_COMMANDS) {
      const result = await lab.adb.run(['-s', lab.serial, 'shell', command], { timeoutMs: STEP_TIMEOUT_MS });
      if (result.code !== 0) throw new Error(`adb shell ${command} exited ${result.code}: ${result.stderr}`);
    }
  };

  const direct: number[] = [];
  const viaCli: number[] = [];
  const api: number[] = [];
  const polls: number[] = [];
  const cleanups: number[] = [];
  const deadline = performance.now() + LOOP_BUDGET_MS;
  for (let round = 0; round < WARMUP_ROUNDS + ROUNDS && performance.now() < deadline; round++) {
    const d = await timed('the direct preparation', () => driver.prepare());
    const c = await timed('the preparation through the adb command line', cli);
    const a = await allocateUntilInUse(lab, sessionId, STEP_TIMEOUT_MS);
    const r = await releaseUntilFree(lab, sessionId, STEP_TIMEOUT_MS);
    if (round < WARMUP_ROUNDS) continue;
    direct.push(d);
    viaCli.push(c);
    api.push(a.ms);
    polls.push(a.polls);
    cleanups.push(r);
  }
  if (api.length < ROUNDS) throw new Error(`${label}: only ${api.length} of ${ROUNDS} rounds ran within ${LOOP_BUDGET_MS / 1000} s`);

  detail(`${label}:`);
  detail(`  direct, the engine's AndroidDriver.prepare() through adbkit: ${summary(direct)}`);
  detail(`  the same ${PREPARE_COMMANDS.length} commands as \`adb -s <serial> shell ...\` (a process each): ${summary(viaCli)}`);
  detail(`  API, POST /devices to the first poll showing in_use: ${summary(api)}; ${median(polls)} polls (median)`);
  detail(`  overhead (API median - direct median): ${fmtMs(median(api) - median(direct))}`);
  detail(`  release to the phone free again (cleanup done): ${summary(cleanups)}`);
  return { api, direct };
}

/**
 * Copies the newest cleaned allocation, and its usage entry, `count` times into sessions of their own, one second
 * apart and older than anything else in the organization (createdAt is unique per organization).
 */
async function seedHistory(lab: AndroidLab, count: number): Promise<void> {
  const start = performance.now();
  const db = new Database(join(lab.dataDir, DB_FILE));
  try {
    // Seeding only: durability does not matter here.
    db.pragma('synchronous = OFF');
    const template = db
      .prepare(`SELECT a.id, a.organization_id AS org, s.created_by AS user FROM device_allocations a JOIN sessions s ON s.id = a.session_id
                WHERE a.cleaned_at IS NOT NULL ORDER BY a.created_at DESC LIMIT 1`)
      .get() as { id: string; org: string; user: string | null } | undefined;
    if (!template) throw new Error('no cleaned allocation to copy');
    const columns = (db.pragma('table_info(device_allocations)') as { name: string }[]).map((c) => c.name);
    const replaced: Record<string, string> = {
      id: '@id',
      session_id: '@sessionId',
      created_at: '@at',
      assigned_at: '@at',
      released_at: '@at + 600000',
      cleaned_at: '@at + 601000',
    };
    const insertSession = db.prepare('INSERT INTO sessions (id, organization_id, created_by, created_at) VALUES (@sessionId, @org, @user, @at)');
    const copyAllocation = db.prepare(
      `INSERT INTO device_allocations (${columns.join(', ')}) SELECT ${columns.map((c) => replaced[c] ?? c).join(', ')} FROM device_allocations WHERE id = @template`,
    );
    const insertUsage = db.prepare(
      `INSERT INTO usage_ledger (organization_id, resource, subject_id, started_at, ended_at) VALUES (@org, 'devices', @id, @at, @at + 600000)`,
    );
    const oldest = Date.now() - 24 * 3600_000 - count * 1000;
    for (let from = 0; from < count; from += SEED_BATCH) {
      db.transaction(() => {
        for (let i = from; i < Math.min(count, from + SEED_BATCH); i++) {
          const row = { id: randomUUID(), sessionId: randomUUID(), org: template.org, user: template.user, at: oldest + i * 1000, template: template.id };
          insertSession.run(row);
          copyAllocation.run(row);
          insertUsage.run(row);
        }
      })();
      // An interrupt reaches the cleanup between batches.
      await new Promise(setImmediate);
    }
    db.pragma('wal_checkpoint(TRUNCATE)');
  } finally {
    db.close();
  }
  const size = statSync(join(lab.dataDir, DB_FILE)).size / 2 ** 20;
  detail(`seeded ${count.toLocaleString('en-US')} past allocations in ${fmtMs(performance.now() - start)} (database ${size.toFixed(0)} MB)`);
}

function figure(name: string, label: string, { api, direct }: { api: number[]; direct: number[] }): Figure {
  const [apiMedian, directMedian] = [median(api), median(direct)];
  const overhead = apiMedian - directMedian;
  return {
    benchmark: name,
    figure: `POST /devices to in_use minus adb, ${label}`,
    value: `overhead ${fmtMs(overhead)} (API median ${fmtMs(apiMedian)}, p95 ${fmtMs(percentile(api, 95))})`,
    baseline: `direct prepare() median ${fmtMs(directMedian)}`,
    ratio: fmtRatio(apiMedian, directMedian),
    target: `overhead < ${TARGET_OVERHEAD_MS} ms`,
    met: overhead < TARGET_OVERHEAD_MS,
  };
}

export const allocation: Benchmark = {
  name: 'allocation',
  title: `POST /devices to in_use on a simulated phone vs the same preparation through adbkit, ${ROUNDS} rounds after ${WARMUP_ROUNDS} warm-up`,
  async run() {
    const lab = await startAndroidLab('benchtop-bench-allocation-');
    const { id: sessionId } = await call<{ id: string }>('POST', `${lab.engine.api}/sessions`, { bearer: lab.apiKey });
    const fresh = await rounds(lab, sessionId, 'fresh lab');
    await seedHistory(lab, HISTORY);
    const history = `${HISTORY.toLocaleString('en-US')} past allocations`;
    const seeded = await rounds(lab, sessionId, history);
    await lab.engine.child.stop();
    return [figure(this.name, 'fresh lab', fresh), figure(this.name, history, seeded)];
  },
};
