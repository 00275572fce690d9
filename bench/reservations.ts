/**
 * Target: a long calendar does not slow allocation down. With 1,000 reservations in the lab's calendar, allocating
 * a phone costs at most 1.2x what it costs with none, measured in the same run on the same phone.
 *
 * Each round times one allocation: the POST's reply (the engine's own work: matching, the queue, the reserved
 * phones read from the calendar) and the time until the session's device list shows it in_use; then it releases the
 * phone and waits until cleanup has finished, so that every round starts from the same phone state. The rounds run
 * with an empty calendar, then again after 1,000 one-hour reservations have been booked through the API (on the one
 * phone, back to back over the next six weeks).
 */
import { allocateUntilInUse, releaseUntilFree, startAndroidLab, type AndroidLab } from './support/android-lab.js';
import { detail, fmtMs, fmtRatio, median, percentile, type Benchmark, type Figure } from './support/report.js';
import { call } from './support/servers.js';
import { sized } from './support/smoke.js';

const WARMUP_ROUNDS = sized(10, 0);
const ROUNDS = sized(20, 1);
const RESERVATIONS = sized(1_000, 10);
const STEP_TIMEOUT_MS = 10_000;
const TARGET_RATIO = 1.2;

const summary = (xs: number[]) => `median ${fmtMs(median(xs))}, p95 ${fmtMs(percentile(xs, 95))}`;

/** Times the POST alone (what the engine decides before it answers) and the whole way to in_use. */
async function rounds(lab: AndroidLab, sessionId: string, label: string): Promise<{ post: number[]; inUse: number[] }> {
  const post: number[] = [];
  const inUse: number[] = [];
  for (let round = 0; round < WARMUP_ROUNDS + ROUNDS; round++) {
    const start = performance.now();
    let replied = 0;
    const a = await allocateUntilInUse(lab, sessionId, STEP_TIMEOUT_MS, () => (replied = performance.now() - start));
    await releaseUntilFree(lab, sessionId, STEP_TIMEOUT_MS);
    if (round < WARMUP_ROUNDS) continue;
    post.push(replied);
    inUse.push(a.ms);
  }
  detail(`${label}: POST /devices answered in ${summary(post)}; in_use after ${summary(inUse)}`);
  return { post, inUse };
}

async function book(lab: AndroidLab, count: number): Promise<void> {
  const start = performance.now();
  const first = Date.now() + 3600_000;
  for (let i = 0; i < count; i++) {
    const startsAt = first + i * 3600_000;
    await call('POST', `${lab.engine.api}/reservations`, {
      bearer: lab.apiKey,
      body: {
        filters: [{ attribute: 'platform', operator: 'EQUALS', value: 'android' }],
        startsAt: new Date(startsAt).toISOString(),
        endsAt: new Date(startsAt + 3600_000).toISOString(),
        title: `booking ${i}`,
      },
    });
  }
  detail(`booked ${count.toLocaleString('en-US')} reservations in ${fmtMs(performance.now() - start)}`);
}

export const reservations: Benchmark = {
  name: 'reservations',
  title: `Allocation with ${RESERVATIONS.toLocaleString('en-US')} reservations in the calendar vs none, ${ROUNDS} rounds after ${WARMUP_ROUNDS} warm-up`,
  async run() {
    const lab = await startAndroidLab('benchtop-bench-reservations-');
    const { id: sessionId } = await call<{ id: string }>('POST', `${lab.engine.api}/sessions`, { bearer: lab.apiKey });
    const none = await rounds(lab, sessionId, 'empty calendar');
    await book(lab, RESERVATIONS);
    const full = await rounds(lab, sessionId, `${RESERVATIONS.toLocaleString('en-US')} reservations`);
    await lab.engine.child.stop();
    const figure = (what: string, key: 'post' | 'inUse'): Figure => {
      const [value, baseline] = [median(full[key]), median(none[key])];
      return {
        benchmark: 'reservations',
        figure: `${what}, ${RESERVATIONS.toLocaleString('en-US')} reservations`,
        value: `median ${fmtMs(value)} (p95 ${fmtMs(percentile(full[key], 95))})`,
        baseline: `empty calendar median ${fmtMs(baseline)}`,
        ratio: fmtRatio(value, baseline),
        target: `<= ${TARGET_RATIO}x`,
        met: value / baseline <= TARGET_RATIO,
      };
    };
    return [figure('POST /devices reply', 'post'), figure('POST /devices to in_use', 'inUse')];
  },
};
