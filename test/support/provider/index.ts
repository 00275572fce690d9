import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { SimulatedPhoneOptions } from '../../../src/sim/android/index.js';
import type { SimulatedIPhoneOptions } from '../../../src/sim/ios/index.js';
import { hubAddress, ip, makeNamespace, networkHub, removeNamespace } from '../netns.js';
import { prepareSshd } from '../sshd-config.js';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..', '..');
const PHONES_SCRIPT = fileURLToPath(new URL('./phones-process.ts', import.meta.url));
const IPHONES_SCRIPT = fileURLToPath(new URL('./iphones-process.ts', import.meta.url));

/**
 * One provider on this machine with real separation: its own Linux network namespace, whose one link is a veth pair
 * plugged into the run's network hub (test/support/netns.ts), at an address that exists nowhere else, with its own
 * sshd, its own `adb -P 5037 nodaemon server` and simulated phones on the namespace's loopback. The hub (the lab box)
 * reaches it only at `address:22`.
 */
export interface NetnsProvider {
  namespace: string;
  /** The namespace's end of the veth pair: where its sshd listens. */
  address: string;
  /** The hub's end of the veth pair, in the run's hub (`ip link set <hubLink> down` pulls the provider's cable). */
  hubLink: string;
  privateKey: string;
  serials: string[];
  /** The UDIDs of its simulated iPhones. */
  udids: string[];
  /** Its usbmuxd's socket (a file of its own: never the machine's /var/run/usbmuxd). */
  usbmuxdSocket: string;
  /** A Mac provider's xcrun runs so far (their arguments), as the scripted xcrun logged them on the provider; [] elsewhere. */
  xcrunRuns(): string[];
  /** The body of POST /lab/providers for it. */
  body(overrides?: Record<string, unknown>): Record<string, unknown>;
  linkDown(): void;
  linkUp(): void;
  /** Runs the adb CLI on the provider itself (in its namespace, against its own server), as someone at that box would. */
  adb(...args: string[]): string;
  /** Kills the provider's adb server (its phones' transports die with it). */
  killAdb(): void;
  stop(): Promise<void>;
}

export interface NetnsProviderOptions {
  /** Ports below 32768: the namespace's adb server's own connections take ephemeral ports above it. */
  phones: Array<{ port: number; options?: SimulatedPhoneOptions }>;
  /** Simulated iPhones on a simulated usbmuxd inside the namespace. */
  iphones?: SimulatedIPhoneOptions[];
  /**
   * A Mac provider: the scripted xcrun (test/support/ios-host/xcrun.mjs), reaching these iPhones' CoreDevice inside
   * the namespace, is on the SSH account's PATH (sshd's SetEnv), as Xcode's xcrun is on a Mac's.
   */
  mac?: boolean;
}


/**
 * Whether this machine lets the test make namespaces. Under CI (which runs as root) a refusal is a failure; elsewhere
 * the suite is skipped loudly, naming why.
 */
export function netnsOrSkip(): boolean {
  const probe = `bt-probe-${process.pid}`;
  try {
    ip('netns', 'add', probe);
    ip('netns', 'del', probe);
    return true;
  } catch (error) {
    const why = ((error as { stderr?: Buffer | string }).stderr ?? (error as Error).message).toString().trim();
    if (process.env.CI === 'true') throw new Error(`ip netns add is refused (${why}): the provider tests need root and iproute2 (apt-get install -y iproute2)`, { cause: error });
    console.warn(`SKIPPING provider tests: ip netns add is refused here (${why}); they need root and iproute2.`);
    return false;
  }
}

export async function startNetnsProvider(index: number, options: NetnsProviderOptions): Promise<NetnsProvider> {
  const tag = `${process.pid % 100000}${index}`;
  const namespace = `bt-prov-${tag}`;
  const hubLink = `bth${tag}`;
  const nsLink = `btp${tag}`;
  // Each provider's address on the run's hub: hosts 10 and up of this worker's.
  const ns = hubAddress(10 + index);
  const dir = mkdtempSync(join(tmpdir(), 'benchtop-provider-'));
  const children: ChildProcess[] = [];
  let made = false;
  const stop = async () => {
    for (const child of children) child.kill('SIGTERM');
    // Everything still running inside the namespace, by pid, before the namespace goes.
    if (made) removeNamespace({ namespace, hubLink });
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    made = true;
    makeNamespace({ namespace, hubLink, nsLink, ns });
    // Verify the link before anything is sent: the namespace's address is reached through the hub and nothing else,
    // and the namespace has no route beyond the hub's /16 (no default route out).
    const { bridge } = networkHub();
    const route = ip('route', 'get', ns);
    if (!new RegExp(`dev ${bridge}\\b`).test(route)) throw new Error(`${ns} would not go through the hub ${bridge}: ${route}`);
    const nsRoutes = ip('-n', namespace, 'route', 'show');
    if (/default/.test(nsRoutes)) throw new Error(`namespace ${namespace} has a default route: ${nsRoutes}`);

    const home = join(dir, 'home');
    const tmp = join(dir, 'tmp');
    const xcrunDir = join(dir, 'xcode');
    for (const d of [home, tmp, xcrunDir]) mkdirSync(d);
    // The SSH account's commands run in its login shell with a home of the provider's own, as a dedicated account's
    // would: not this machine's /root, whose shell start-up files are someone else's (and may take seconds).
    // sshd takes the first SetEnv line only: every variable goes on one.
    const path = `${options.mac ? `${xcrunDir}:` : ''}/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin`;
    prepareSshd(dir, ns, [`SetEnv HOME=${home} TMPDIR=${tmp} PATH=${path}`]);
    const env: NodeJS.ProcessEnv = { ...process.env, HOME: home, TMPDIR: tmp };
    delete env.ADB_SERVER_SOCKET;
    delete env.ANDROID_ADB_SERVER_PORT;

    const started = (child: ChildProcess, pattern: RegExp | null, what: string) =>
      new Promise<string>((resolve, reject) => {
        children.push(child);
        let out = '';
        const timer = setTimeout(() => reject(new Error(`${what} did not start within 20 s:\n${out}`)), 20_000);
        const onData = (chunk: Buffer) => {
          out += chunk.toString();
          const m = pattern?.exec(out);
          if (m) {
            clearTimeout(timer);
            resolve(m[1] ?? m[0]);
          }
        };
        child.stdout?.on('data', onData);
        child.stderr?.on('data', onData);
        child.once('exit', (code) => {
          clearTimeout(timer);
          reject(new Error(`${what} exited with ${code}:\n${out}`));
        });
        if (!pattern) {
          clearTimeout(timer);
          resolve('');
        }
      });
    const inNs = (args: string[], extra: NodeJS.ProcessEnv = {}) =>
      spawn('ip', ['netns', 'exec', namespace, ...args], { env: { ...env, ...extra }, stdio: ['ignore', 'pipe', 'pipe'], cwd: ROOT });

    const sshdUp = started(inNs(['/usr/sbin/sshd', '-D', '-e', '-f', join(dir, 'sshd_config')]), /Server listening on/, 'sshd');
    const adb = inNs(['adb', '-P', '5037', 'nodaemon', 'server']);
    children.push(adb);
    adb.stdout.resume();
    adb.stderr.resume();
    await sshdUp;
    // The adb server answers once its port is bound; the phones' `adb connect` retries until then.
    await waitForAdb(namespace);
    const phones = inNs([process.execPath, '--import', 'tsx', PHONES_SCRIPT], {
      PROVIDER_PHONES: JSON.stringify(options.phones.map((p) => ({ port: p.port, options: p.options ?? {} }))),
      PROVIDER_ADB_PORT: '5037',
    });
    const usbmuxdSocket = join(dir, 'usbmuxd');
    const iphones = options.iphones?.length
      ? inNs([process.execPath, '--import', 'tsx', IPHONES_SCRIPT], {
        PROVIDER_IPHONES: JSON.stringify(options.iphones),
        PROVIDER_USBMUXD_SOCKET: usbmuxdSocket,
        ...(options.mac ? { PROVIDER_XCRUN_DIR: xcrunDir } : {}),
      })
      : undefined;
    const [serials, udids] = await Promise.all([
      started(phones, /READY (\[.*\])/, 'the simulated phones').then((s) => JSON.parse(s) as string[]),
      iphones ? started(iphones, /READY (\[.*\])/, 'the simulated iPhones').then((s) => JSON.parse(s) as string[]) : [],
    ]);
    const privateKey = readFileSync(join(dir, 'id'), 'utf8');
    return {
      namespace,
      address: ns,
      hubLink,
      privateKey,
      serials,
      udids,
      usbmuxdSocket,
      xcrunRuns: () => (existsSync(join(xcrunDir, 'xcrun.log')) ? readFileSync(join(xcrunDir, 'xcrun.log'), 'utf8').split('\n').filter(Boolean) : []),
      body: (overrides = {}) => ({ name: `provider-${index}`, address: ns, port: 22, username: 'root', privateKey, usbmuxdSocket, ...overrides }),
      linkDown: () => void ip('link', 'set', hubLink, 'down'),
      linkUp: () => void ip('link', 'set', hubLink, 'up'),
      killAdb: () => void adb.kill('SIGKILL'),
      adb: (...args) => execFileSync('ip', ['netns', 'exec', namespace, 'adb', '-P', '5037', ...args], { env, encoding: 'utf8' }),
      stop,
    };
  } catch (error) {
    await stop();
    throw error;
  }
}

async function waitForAdb(namespace: string): Promise<void> {
  const deadline = Date.now() + 10_000;
  for (;;) {
    try {
      // ss inside the namespace: is anything listening on 5037 there yet?
      if (/:5037\b/.test(ip('netns', 'exec', namespace, 'ss', '-ltn'))) return;
    } catch {
      /* not yet */
    }
    if (Date.now() > deadline) throw new Error(`the adb server in ${namespace} did not listen within 10 s`);
    await new Promise((r) => setTimeout(r, 50));
  }
}
