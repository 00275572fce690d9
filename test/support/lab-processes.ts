import { readdirSync, readFileSync, readlinkSync } from 'node:fs';
import { startAdbServer, type AdbServer } from '../../src/sim/android/index.js';
import { call, client } from './engine.js';
import { waitFor } from './lab.js';
import { remotePorts } from './remote.js';
import { startServeProcess, type ServeProcess } from './serve-process.js';
import { labSession } from './webdriver.js';

export interface LabProcess {
  pid: number;
  ppid: number;
  home: string;
  cmdline: string;
}

/**
 * Live processes (not zombies) whose HOME lies under one of `roots`: what an engine of that data dir runs for
 * WebDriver (Appium's HOME is <data dir>/appium, its private adb server's <data dir>/appium/adb) and anything those start.
 */
export function processesUnder(roots: string[]): LabProcess[] {
  const found: LabProcess[] = [];
  for (const name of readdirSync('/proc').filter((n) => /^\d+$/.test(n))) {
    try {
      const cmdline = readFileSync(`/proc/${name}/cmdline`, 'utf8');
      if (!cmdline) continue;
      const home = readFileSync(`/proc/${name}/environ`, 'utf8').split('\0').find((v) => v.startsWith('HOME='))?.slice(5);
      const stat = readFileSync(`/proc/${name}/stat`, 'utf8');
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      if (home && roots.some((root) => home.startsWith(`${root}/`))) found.push({ pid: Number(name), ppid, home, cmdline: cmdline.replaceAll('\0', ' ') });
    } catch {
      // Gone meanwhile, or not ours to read.
    }
  }
  return found;
}

/** The loopback TCP ports a process listens on, found as any local process finds them: its sockets in /proc/net/tcp. */
export function listeningPorts(pid: number): number[] {
  const inodes = new Set<string>();
  for (const fd of readdirSync(`/proc/${pid}/fd`)) {
    try {
      const target = readlinkSync(`/proc/${pid}/fd/${fd}`);
      const m = /^socket:\[(\d+)\]$/.exec(target);
      if (m) inodes.add(m[1]!);
    } catch {
      // Closed meanwhile.
    }
  }
  const ports: number[] = [];
  for (const table of ['/proc/net/tcp', '/proc/net/tcp6']) {
    for (const row of readFileSync(table, 'utf8').split('\n').slice(1)) {
      const f = row.trim().split(/\s+/);
      // st 0A is LISTEN; the inode is field 10.
      if (f[3] === '0A' && inodes.has(f[9]!)) ports.push(parseInt(f[1]!.split(':')[1]!, 16));
    }
  }
  return ports;
}

/** An engine as `npm run serve` runs it, with one demo phone behind an adb server of the test's own. */
export interface DemoLab {
  adb: AdbServer;
  env: Record<string, string>;
  serve(): Promise<ServeProcess>;
  /** Kills what is left running and stops the adb server. */
  stop(): Promise<void>;
}

export const DEMO_OWNER = { email: 'demo-owner@lab.test', password: 'password-1' };

export async function startDemoLab(dataDir: string, more: Record<string, string> = {}): Promise<DemoLab> {
  const adb = await startAdbServer();
  const ports = remotePorts(6);
  const running: ServeProcess[] = [];
  const env = {
    ...(adb.env as Record<string, string>),
    BENCHTOP_DATA_DIR: dataDir,
    BENCHTOP_OWNER_EMAIL: DEMO_OWNER.email,
    BENCHTOP_OWNER_PASSWORD: DEMO_OWNER.password,
    BENCHTOP_ADB: 'on',
    BENCHTOP_ADB_PORT: String(adb.port),
    BENCHTOP_DEMO_PHONES: '1',
    BENCHTOP_REMOTE_PORTS: `${ports.first}-${ports.last}`,
    BENCHTOP_REMOTE_PORT_REST_SECONDS: '1',
    ...more,
  };
  return {
    adb,
    env,
    async serve() {
      const p = await startServeProcess(env);
      running.push(p);
      return p;
    },
    async stop() {
      for (const p of running) p.child.kill('SIGKILL');
      for (const { pid } of processesUnder([dataDir])) process.kill(pid, 'SIGKILL');
      await adb.stop();
    },
  };
}

/** Signs in as the owner, makes a key and starts a WebDriver session on the demo phone once the fleet lists it. */
export async function demoSession(api: string, name: string): Promise<{ driver: WebdriverIO.Browser; token: string; key: string }> {
  const token = (await call(api, 'POST', '/auth/login', { body: DEMO_OWNER })).body.token as string;
  const key = await client(api).createKey(token);
  // What the fleet listed last, for the failure's message: a phone never listed, or listed but not attached.
  let listed: string[] = [];
  await waitFor('the demo phone in the fleet', async () => {
    const phones = (await call(api, 'GET', '/fleet/devices', { token })).body.data as Array<{ serial: string; state: string }>;
    listed = phones.map((d) => `${d.serial} ${d.state}`);
    return phones.some((d) => d.state === 'device');
  }, 30_000).catch((error: Error) => {
    throw new Error(`${error.message}; the fleet listed ${listed.length ? listed.join(', ') : 'no phone'}`);
  });
  const driver = await labSession(api, key, { platformName: 'Android', 'appium:automationName': 'UiAutomator2', 'benchtop:options': { name } });
  return { driver, token, key };
}
