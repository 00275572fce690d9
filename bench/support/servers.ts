import { fileURLToPath } from 'node:url';
import { startChild, type Child } from './processes.js';

/**
 * The checkout whose engine the benchmarks start: this one, or BENCH_ROOT's (npm run bench -- --compare runs this
 * checkout's benchmarks against another checkout's engine, so both sides are measured by the same code).
 */
export const ROOT = process.env.BENCH_ROOT ?? fileURLToPath(new URL('../..', import.meta.url));
/** No single request may hang a benchmark. */
export const REQUEST_TIMEOUT_MS = 10_000;
/** Adding a provider: SSH handshakes and the provider's adb server, which a busy machine can take seconds over. */
export const PROVIDER_ADD_TIMEOUT_MS = 60_000;
export const OWNER = { email: 'owner@bench.local', password: 'bench-owner-password' };

export interface Server {
  child: Child;
  /** http://127.0.0.1:<port>/api/v1 */
  api: string;
}

/** The environment `npm run serve` reads, with everything set, so that nothing leaks in from the caller's shell. */
export function engineEnv(dataDir: string, port: number): NodeJS.ProcessEnv {
  return {
    ...process.env,
    BENCHTOP_HOST: '127.0.0.1',
    BENCHTOP_PORT: String(port),
    BENCHTOP_DATA_DIR: dataDir,
    BENCHTOP_OWNER_EMAIL: OWNER.email,
    BENCHTOP_OWNER_PASSWORD: OWNER.password,
    BENCHTOP_LOG_LEVEL: 'warn',
    // These benchmarks measure the control plane; the fleet benchmarks start their own adb server.
    BENCHTOP_ADB: 'off',
  };
}

/**
 * How a benchmark runs the engine: `node scripts/serve.mjs`, as `npm run serve` does. With BENCH_PROFILE_DIR set,
 * the engine writes a V8 CPU profile there when it stops (open it in Chrome's DevTools, Performance tab): where a
 * figure's time goes in the engine.
 */
export const SERVE_ARGS = [
  ...(process.env.BENCH_PROFILE_DIR ? ['--cpu-prof', `--cpu-prof-dir=${process.env.BENCH_PROFILE_DIR}`, '--cpu-prof-interval=200'] : []),
  'scripts/serve.mjs',
];

/** The headless engine in its own node process, on an ephemeral port, started as `npm run serve` starts it. */
export async function startEngine(dataDir: string, env: NodeJS.ProcessEnv = {}): Promise<Server> {
  const child = startChild(process.execPath, SERVE_ARGS, { cwd: ROOT, env: { ...engineEnv(dataDir, 0), ...env } });
  const [, url] = await child.waitForOutput(/Benchtop is serving (http:\/\/\S+)\/api\/v1/, 30_000);
  return { child, api: `${url}/api/v1` };
}

export const BARE_FASTIFY_SCRIPT = fileURLToPath(new URL('./bare-fastify.mjs', import.meta.url));

/** The baseline server in its own node process. */
export async function startBareFastify(): Promise<Server> {
  const child = startChild(process.execPath, [BARE_FASTIFY_SCRIPT], { cwd: ROOT, env: { ...process.env, PORT: '0' } });
  const [, url] = await child.waitForOutput(/Bare Fastify is serving (http:\/\/\S+)\/api\/v1/, 30_000);
  return { child, api: `${url}/api/v1` };
}

/** Logs in as the owner and creates an API key in the owner's Personal organization. */
export async function ownerApiKey(api: string): Promise<string> {
  const { token } = await call<{ token: string }>('POST', `${api}/auth/login`, { body: OWNER });
  const { apiKey } = await call<{ apiKey: string }>('POST', `${api}/keys`, { bearer: token, body: { name: 'bench' } });
  return apiKey;
}

/** One JSON request; anything but a 2xx is an error, since a benchmark of error replies measures nothing. */
export async function call<T>(method: string, url: string, options: { bearer?: string; body?: unknown; timeoutMs?: number } = {}): Promise<T> {
  const headers: Record<string, string> = {};
  if (options.bearer) headers.authorization = `Bearer ${options.bearer}`;
  if (options.body !== undefined) headers['content-type'] = 'application/json';
  const res = await fetch(url, {
    method,
    headers,
    body: options.body === undefined ? undefined : JSON.stringify(options.body),
    signal: AbortSignal.timeout(options.timeoutMs ?? REQUEST_TIMEOUT_MS),
  });
  const text = await res.text();
  if (!res.ok) throw new Error(`${method} ${url} answered ${res.status}: ${text}`);
  return JSON.parse(text) as T;
}
