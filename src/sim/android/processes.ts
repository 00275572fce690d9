/**
 * The phone's long-running native processes (minicap), so that `ps`, `pidof` and `kill` see them and a host can
 * stop one by its pid, as STF stops minicap.
 */
export interface NativeProcess {
  pid: number;
  /** The name `ps` and `pidof` show: the executable's base name, or app_process's nice name. */
  name: string;
  /** Aborted by `kill`, or when the adb stream that started it closes (adbd hangs its process group up). */
  readonly signal: AbortSignal;
  /** Who `ps` says runs it: `shell` for what the shell started, `u0_aN` for an app's process. */
  user: string;
  /** The packages loaded in an app's process: a force-stop of any of them kills it. */
  packages: string[];
}

/** Who runs an app's process, as `ps` names it: u0_a150 for uid 10150 (user 0's app ids start at 10000). */
export function appUser(uid: number): string {
  return uid >= 10000 ? `u0_a${uid - 10000}` : 'system';
}

export class ProcessTable {
  private readonly running = new Map<number, NativeProcess & { controller: AbortController }>();
  private nextPid = 8000;

  /** `keepsOnHangup`: a process outlives its shell's stream (an adbd that does not hang up the process group). */
  constructor(private readonly keepsOnHangup = false) {}

  /** Registers a process for as long as `signal` (the shell stream) stays open; `exit()` removes it. */
  spawn(name: string, parent: AbortSignal, options: { user?: string; packages?: string[] } = {}): NativeProcess & { exit(): void } {
    const controller = new AbortController();
    const pid = this.nextPid++;
    const onParent = () => {
      if (!this.keepsOnHangup) controller.abort();
    };
    parent.addEventListener('abort', onParent, { once: true });
    if (parent.aborted) onParent();
    const user = options.user ?? 'shell';
    const packages = options.packages ?? [];
    const entry = { pid, name, signal: controller.signal, user, packages, controller };
    this.running.set(pid, entry);
    return {
      pid,
      name,
      signal: controller.signal,
      user,
      packages,
      exit: () => {
        parent.removeEventListener('abort', onParent);
        this.running.delete(pid);
      },
    };
  }

  /** `signal` is the abort's reason: a process that gets SIGKILL has no chance to finish what it writes. */
  kill(pid: number, signal: 'SIGTERM' | 'SIGKILL' = 'SIGTERM'): boolean {
    const p = this.running.get(pid);
    if (!p) return false;
    p.controller.abort(signal);
    return true;
  }

  /** Kills the app processes that have `packageName` loaded (a force-stop). */
  killPackage(packageName: string): void {
    for (const p of this.running.values()) if (p.packages.includes(packageName)) p.controller.abort();
  }

  byName(name: string): NativeProcess[] {
    return [...this.running.values()].filter((p) => p.name === name);
  }

  list(): NativeProcess[] {
    return [...this.running.values()];
  }
}
