import { setTimeout as sleep } from 'node:timers/promises';
import { Client, type ClientChannel, type ConnectConfig } from 'ssh2';
import WebSocket from 'ws';
import { startMacHost, type MacHostSim } from '../../test/support/mac-host/index.js';
import { onCleanup, tempDir } from './cleanup.js';
import { nodeScript } from './bundle.js';
import { fileURLToPath } from 'node:url';
import { rssMb, startChild } from './processes.js';
import { call, OWNER, ownerApiKey, ROOT, startEngine, type Server } from './servers.js';

const START_TIMEOUT_MS = 30_000;

/** A simulated Mac (the real sshd on loopback, the scripted tart, as the tests start it) and the engine driving it. */
export interface MacLab {
  mac: MacHostSim;
  /** The engine in its own process, as `npm run serve` starts it. */
  engine: Server;
  apiKey: string;
  session: string;
}

interface Instance {
  id: string;
  status: string;
  createdAt: string;
  readyAt: string | null;
}

/** Everything it starts is stopped at cleanup: the engine first, then the Mac. */
export async function startMacLab(prefix: string): Promise<MacLab> {
  const mac = await startMacHost();
  onCleanup(() => mac.stop());
  const engine = await startEngine(tempDir(prefix));
  // Lab administration takes the owner's interactive token, not an API key.
  const { token } = await call<{ token: string }>('POST', `${engine.api}/auth/login`, { body: OWNER });
  const host = await call<{ id: string }>('POST', `${engine.api}/lab/hosts`, { bearer: token, body: mac.hostBody({ name: 'bench-mac' }) });
  const apiKey = await ownerApiKey(engine.api);
  const deadline = performance.now() + START_TIMEOUT_MS;
  for (;;) {
    const { data } = await call<{ data: Array<{ id: string; health: string }> }>('GET', `${engine.api}/fleet/hosts`, { bearer: apiKey });
    if (data.find((h) => h.id === host.id)?.health === 'up') break;
    if (performance.now() > deadline) throw new Error(`the simulated Mac was not up within ${START_TIMEOUT_MS} ms`);
    await sleep(20);
  }
  const { id: session } = await call<{ id: string }>('POST', `${engine.api}/sessions`, { bearer: apiKey });
  return { mac, engine, apiKey, session };
}

/**
 * POSTs an instance and polls it every 10 ms (often enough to see, seldom enough not to load the engine's CPU,
 * which the provisioning shares) until it is ready. Answers the wall time from sending the POST to the
 * reply that first showed ready, and the engine's own readyAt - createdAt.
 */
export async function allocateReady(lab: MacLab): Promise<{ id: string; ms: number; engineMs: number }> {
  const base = `${lab.engine.api}/sessions/${lab.session}/instances`;
  const start = performance.now();
  const { id } = await call<Instance>('POST', base, { bearer: lab.apiKey, body: { os: 'macos' } });
  for (;;) {
    const instance = await call<Instance>('GET', `${base}/${id}`, { bearer: lab.apiKey });
    if (instance.status === 'ready') {
      return { id, ms: performance.now() - start, engineMs: Date.parse(instance.readyAt!) - Date.parse(instance.createdAt) };
    }
    if (instance.status !== 'provisioning') throw new Error(`instance ${id} went ${instance.status}: ${JSON.stringify(instance)}`);
    if (performance.now() - start > START_TIMEOUT_MS) throw new Error(`instance ${id} was not ready within ${START_TIMEOUT_MS} ms`);
    await sleep(10);
  }
}

/** Releases the instance and waits until its VM is deleted and the engine has its slot back. */
export async function releaseAndWait(lab: MacLab, id: string): Promise<void> {
  await call('POST', `${lab.engine.api}/sessions/${lab.session}/instances/${id}/release`, { bearer: lab.apiKey });
  const deadline = performance.now() + START_TIMEOUT_MS;
  for (;;) {
    const { data } = await call<{ data: Array<{ freeSlots: number; maxInstances: number }> }>('GET', `${lab.engine.api}/fleet/hosts`, { bearer: lab.apiKey });
    if (lab.mac.vms().length === 0 && data[0]!.freeSlots === data[0]!.maxInstances) return;
    if (performance.now() > deadline) throw new Error(`instance ${id} was not torn down within ${START_TIMEOUT_MS} ms`);
    await sleep(20);
  }
}

/** A plain ssh2 connection, with Nagle off as the engine has it. */
export function sshConnect(config: ConnectConfig): Promise<Client> {
  return new Promise((resolve, reject) => {
    const client = new Client();
    client.once('ready', () => resolve(client));
    client.once('error', reject);
    client.connect({ readyTimeout: START_TIMEOUT_MS, ...config });
    client.setNoDelay(true);
  });
}

/** The simulated Mac's host login. */
export const hostLogin = (mac: MacHostSim): ConnectConfig => ({ host: mac.address, port: mac.port, username: mac.username, privateKey: mac.privateKey });

/** The "VM" through the host, as the engine reaches a Tart VM: a second SSH connection over a forwarded channel. */
export async function jumpToVm(mac: MacHostSim, host: Client): Promise<Client> {
  const channel = await new Promise<ClientChannel>((resolve, reject) =>
    host.forwardOut('127.0.0.1', 0, '127.0.0.1', mac.port, (error, ch) => (error ? reject(error) : resolve(ch))));
  return sshConnect({ sock: channel, username: mac.username, privateKey: mac.privateKey });
}

export function sshExec(client: Client, command: string): Promise<{ code: number | null; stdout: string }> {
  return new Promise((resolve, reject) => {
    client.exec(command, (error, channel) => {
      if (error) return reject(error);
      let stdout = '';
      let code: number | null = null;
      channel.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
      channel.stderr.on('data', () => undefined);
      channel.on('exit', (c: number | null) => (code = c));
      channel.on('close', () => resolve({ code, stdout }));
    });
  });
}

/** Raw bytes both ways: what a terminal benchmark drives, over the engine's WebSocket or a direct ssh2 shell. */
export interface Tty {
  write(data: Buffer): void;
  /** Answers how to stop listening. */
  onData(listener: (chunk: Buffer) => void): () => void;
  close(): Promise<void>;
  /** Stops or restarts reading, as a client that falls behind would. */
  pause(): void;
  resume(): void;
}

export async function directShell(mac: MacHostSim): Promise<Tty> {
  const host = await sshConnect(hostLogin(mac));
  const vm = await jumpToVm(mac, host);
  const stream = await new Promise<ClientChannel>((resolve, reject) =>
    vm.shell({ term: 'xterm-256color', cols: 80, rows: 24 }, (error, ch) => (error ? reject(error) : resolve(ch))));
  onCleanup(() => void host.end());
  return {
    write: (data) => void stream.write(data),
    onData: (listener) => {
      stream.on('data', listener);
      return () => void stream.off('data', listener);
    },
    pause: () => void stream.pause(),
    resume: () => void stream.resume(),
    close: async () => {
      vm.end();
      host.end();
    },
  };
}

export function engineShell(lab: MacLab, instanceId: string, name = 'bench'): Promise<Tty> {
  return socketShell(`${lab.engine.api.replace(/^http/, 'ws')}/sessions/${lab.session}/instances/${instanceId}/terminal?token=${lab.apiKey}&name=${name}`);
}

const RELAY_SCRIPT = fileURLToPath(new URL('./ssh-relay-process.ts', import.meta.url));

/** A bare WebSocket-to-ssh2 relay in its own process (see ssh-relay-process.ts); answers its URL. */
export async function startRelay(mac: MacHostSim): Promise<string> {
  const login = { address: mac.address, port: mac.port, username: mac.username, privateKey: mac.privateKey };
  const child = startChild(process.execPath, nodeScript(RELAY_SCRIPT), { cwd: ROOT, env: { ...process.env, BENCH_MAC: JSON.stringify(login) } });
  const [, port] = await child.waitForOutput(/Relay listening on 127\.0\.0\.1:(\d+)/, START_TIMEOUT_MS);
  return `ws://127.0.0.1:${port}`;
}

/** A terminal over a WebSocket: binary messages are the bytes; it is ready at the first text message (the engine's size). */
export async function socketShell(url: string): Promise<Tty> {
  const ws = new WebSocket(url);
  onCleanup(() => ws.terminate());
  await new Promise<void>((resolve, reject) => {
    ws.on('message', (_data, binary) => {
      if (!binary) resolve();
    });
    ws.once('error', reject);
  });
  return {
    write: (data) => ws.send(data),
    onData: (listener) => {
      const onMessage = (data: Buffer, binary: boolean) => {
        if (binary) listener(data);
      };
      ws.on('message', onMessage);
      return () => void ws.off('message', onMessage);
    },
    pause: () => ws.pause(),
    resume: () => ws.resume(),
    close: () =>
      new Promise((resolve) => {
        ws.once('close', () => resolve());
        ws.close();
      }),
  };
}

/** Output as text, with a way to wait for some of it. */
export function transcript(tty: Tty): { bytes(): number; until(pattern: RegExp, timeoutMs?: number): Promise<void>; stop(): void } {
  let text = '';
  let bytes = 0;
  const stop = tty.onData((chunk) => {
    bytes += chunk.length;
    // Only the tail is kept: a cat of 50 MiB must not be held here.
    text = (text + chunk.subarray(-4096).toString('latin1')).slice(-4096);
  });
  return {
    stop,
    bytes: () => bytes,
    async until(pattern, timeoutMs = START_TIMEOUT_MS) {
      const deadline = performance.now() + timeoutMs;
      while (!pattern.test(text)) {
        if (performance.now() > deadline) throw new Error(`no ${pattern} in the terminal within ${timeoutMs} ms: ${JSON.stringify(text.slice(-300))}`);
        await sleep(1);
      }
    },
  };
}

/** The highest RSS of a process while sampling runs. */
export class PeakRss {
  peakMb: number;
  private timer: NodeJS.Timeout | undefined;

  constructor(private readonly pid: number) {
    this.peakMb = rssMb(pid);
  }

  async during<T>(work: Promise<T>): Promise<T> {
    this.timer = setInterval(() => (this.peakMb = Math.max(this.peakMb, rssMb(this.pid))), 10);
    return work.finally(() => clearInterval(this.timer));
  }
}
