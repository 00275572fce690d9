import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

export interface ServeProcess {
  child: ChildProcess;
  /** http://127.0.0.1:<port>/api/v1 */
  api: string;
  /** Everything printed so far on stdout and stderr. */
  output: () => string;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

/** Runs the headless engine as its own process, exactly as `npm run serve` does, and waits for its URL. */
export async function startServeProcess(env: Record<string, string>): Promise<ServeProcess> {
  const child = spawn(process.execPath, ['scripts/serve.mjs'], {
    cwd: ROOT,
    // No Android fleet unless a test asks for one: an engine looking for adb on 5037 would start a server there.
    env: { ...process.env, BENCHTOP_PORT: '0', BENCHTOP_LOG_LEVEL: 'silent', BENCHTOP_ADB: 'off', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let text = '';
  child.stdout!.on('data', (d) => (text += d));
  child.stderr!.on('data', (d) => (text += d));
  const exited = once(child, 'exit').then(([code, signal]) => ({ code, signal }));
  const api = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`serve did not start in 20 s:\n${text}`)), 20_000);
    const check = () => {
      const m = /serving (https?:\/\/\S+\/api\/v1)/.exec(text);
      if (m) {
        clearTimeout(timer);
        resolve(m[1]!);
      }
    };
    child.stdout!.on('data', check);
    exited.then(() => {
      clearTimeout(timer);
      reject(new Error(`serve exited before it was ready:\n${text}`));
    });
  });
  return { child, api, output: () => text, exited };
}
