import type { Reporter, TestModule } from 'vitest/node';

/**
 * Lists the slowest test files after every run, so that a file that grew slow is seen the day it grows, not when the
 * suite has passed its budget (8 minutes of `npm test` on 2 cores). A file's time is its import plus its tests and
 * hooks: what it costs a worker.
 */
export default class SlowestFilesReporter implements Reporter {
  onTestRunEnd(modules: ReadonlyArray<TestModule>): void {
    const timed = modules.map((m) => {
      const d = m.diagnostic();
      return { file: m.relativeModuleId, ms: d.collectDuration + d.prepareDuration + d.setupDuration + d.duration };
    });
    timed.sort((a, b) => b.ms - a.ms);
    const total = timed.reduce((sum, t) => sum + t.ms, 0);
    const lines = timed.slice(0, 10).map((t) => `  ${(t.ms / 1000).toFixed(1).padStart(6)} s  ${t.file}`);
    console.log(`\nThe ten slowest test files (${timed.length} files, ${(total / 1000).toFixed(0)} s of worker time in all):\n${lines.join('\n')}\n`);
  }
}
