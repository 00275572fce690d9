import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

type Task = () => Promise<void> | void;
const pending: Task[] = [];

/** Registers something to undo when the current benchmark ends (or the run is interrupted); last in, first out. */
export function onCleanup(task: Task): void {
  pending.push(task);
}

let running: Promise<void> | undefined;

/**
 * Runs every registered task, newest first, so that processes stop before their data dirs are removed.
 * A second caller (an interrupt during a benchmark's own cleanup) waits for the same run.
 */
export function cleanup(): Promise<void> {
  running ??= (async () => {
    for (const task of pending.splice(0).reverse()) {
      try {
        await task();
      } catch (error) {
        console.error(`  cleanup failed: ${(error as Error).message}`);
      }
    }
  })().finally(() => (running = undefined));
  return running;
}

/** A fresh directory under os.tmpdir(), removed at cleanup. */
export function tempDir(prefix: string): string {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  onCleanup(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}
