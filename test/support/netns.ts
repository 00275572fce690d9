import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';

/** `ip` from iproute2, its output as text; a failure throws with ip's own message on stderr. */
export const ip = (...args: string[]) => execFileSync('ip', args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });

/**
 * Several `ip` commands in one run of ip (`-batch -`), in `namespace` when given: they stop at the first that fails,
 * which throws with ip's message, unless `force` goes on past failures. A test worker is a large process, and each
 * process it starts costs it about 15-20 ms of CPU for the fork alone: a namespace made with an `ip` per step was 15 s
 * of the workers' CPU in a profiled run.
 */
function ipBatch(commands: string[][], { namespace, force = false }: { namespace?: string; force?: boolean } = {}): void {
  const options = [...(force ? ['-force'] : []), ...(namespace ? ['-n', namespace] : [])];
  execFileSync('ip', [...options, '-batch', '-'], { input: `${commands.map((c) => c.join(' ')).join('\n')}\n`, encoding: 'utf8', stdio: ['pipe', 'pipe', 'pipe'] });
}

/**
 * The run's network hub: a bridge holding this host's one address on a /16 of its own, made once before any test file
 * starts (test/support/network-hub.ts, vitest's global setup) and removed after the last. Each namespace is plugged
 * into it by a veth pair whose host end has no address.
 *
 * Why one hub rather than an address per namespace: Chromium cancels the connections it is opening whenever an address
 * of this host comes or goes (net::ERR_NETWORK_CHANGED), and the GUI tests run beside the provider and app-download
 * tests. A namespace plugged in or pulled out is then a link change only, which Chromium does not act on.
 */
export interface NetworkHub {
  bridge: string;
  /** This host's address on the hub. */
  address: string;
  /** The hub's /16, as its first two octets ("10.<a>"). */
  prefix: string;
}

/** How vitest's global setup hands the hub to the test workers (an environment variable, inherited). */
const HUB_ENV = 'BENCHTOP_TEST_HUB';

/**
 * `ip` arguments that give a host-side link no IPv6 link-local address (its arrival and its duplicate-address check
 * are address changes); none where IPv6 is off, which gives no such address to stop.
 */
function withoutLinkLocal(link: string): string[][] {
  return existsSync('/proc/sys/net/ipv6') ? [['link', 'set', link, 'addrgenmode', 'none']] : [];
}

/** Whether a process of this pid is running (signal 0 only asks). */
function running(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/**
 * Makes a hub: a bridge named after this process (`bthub<pid>`) at 10.<a>.0.1/16, <a> from the pid, the next one when
 * another run on this machine holds that /16 already. The hubs of runs whose process has gone (a crash) are taken away
 * first; a hub of a run still going is never touched.
 */
export function makeHub(): NetworkHub {
  for (const [, name, pid] of ip('-o', 'link', 'show', 'type', 'bridge').matchAll(/^\d+:\s+(bthub(\d+))[:@]/gm)) {
    if (!running(Number(pid))) removeHub({ bridge: name! });
  }
  const bridge = `bthub${process.pid}`;
  for (let step = 0; step < 100; step++) {
    const a = 150 + ((process.pid + step) % 100);
    if (ip('route', 'show', `10.${a}.0.0/16`).trim()) continue;
    // A bridge takes the lowest address of its ports unless given one: as namespaces came and went it would change,
    // and each namespace would keep sending to the old one until its ARP entry ran out (seconds without the hub).
    ip('link', 'add', bridge, 'address', `02:62:74:${a.toString(16).padStart(2, '0')}:00:01`, 'type', 'bridge');
    for (const args of withoutLinkLocal(bridge)) ip(...args);
    ip('addr', 'add', `10.${a}.0.1/16`, 'dev', bridge);
    ip('link', 'set', bridge, 'up');
    return { bridge, address: `10.${a}.0.1`, prefix: `10.${a}` };
  }
  throw new Error('no 10.<a>.0.0/16 between 10.150 and 10.249 is free on this machine for the test network hub');
}

export function removeHub(hub: Pick<NetworkHub, 'bridge'>): void {
  try {
    ip('link', 'del', hub.bridge);
  } catch {
    /* already gone */
  }
}

let ownHub: NetworkHub | undefined;

/**
 * The run's hub: vitest's global setup made it; a process outside vitest (a benchmark) makes its own on first use,
 * removed when the process exits.
 */
export function networkHub(): NetworkHub {
  const given = process.env[HUB_ENV];
  if (given) return JSON.parse(given) as NetworkHub;
  if (!ownHub) {
    const hub = makeHub();
    ownHub = hub;
    process.once('exit', () => removeHub(hub));
  }
  return ownHub;
}

/** Hands the hub to the processes this one starts (vitest's workers). */
export function shareHub(hub: NetworkHub): void {
  process.env[HUB_ENV] = JSON.stringify(hub);
}

/**
 * Makes this process's hub now and hands it to the processes it starts (a benchmark run's), where this machine lets it
 * make one; elsewhere nothing, and what needs namespaces says so itself.
 */
export function offerHub(): void {
  try {
    shareHub(networkHub());
  } catch {
    /* no namespaces here */
  }
}

/**
 * A namespace's address on the hub: 10.<a>.<worker>.<host>. Each vitest worker (VITEST_POOL_ID, 1 to its number of
 * workers) has its own third octet, since two workers' files run at once, and so does each worker of a smoke run of
 * the benchmarks (BENCH_SMOKE_WORKER, 1 to its number of workers, from 200 up); any other process has 0.
 */
export function hubAddress(host: number): string {
  const smokeWorker = Number(process.env.BENCH_SMOKE_WORKER);
  const worker = process.env.VITEST_POOL_ID !== undefined ? Number(process.env.VITEST_POOL_ID) : smokeWorker > 0 ? 200 + smokeWorker : 0;
  return `${networkHub().prefix}.${worker % 256}.${host}`;
}

/**
 * A network namespace plugged into the hub by a veth pair: `hubLink` (this host's end, no address: the cable, which
 * `ip link set <hubLink> down` pulls) and `nsLink` (the namespace's, at `ns`), with the namespace's loopback up and no
 * route beyond the hub's /16: nothing of it leaves this machine.
 */
export interface Veth {
  namespace: string;
  hubLink: string;
  nsLink: string;
  ns: string;
}

/** Makes the namespace and its veth pair; a half-made one is for `removeNamespace` to take away. */
export function makeNamespace({ namespace, hubLink, nsLink, ns }: Veth): void {
  const hub = networkHub();
  ipBatch([
    ['netns', 'add', namespace],
    ['link', 'add', hubLink, 'type', 'veth', 'peer', 'name', nsLink],
    ['link', 'set', nsLink, 'netns', namespace],
    ...withoutLinkLocal(hubLink),
    ['link', 'set', hubLink, 'master', hub.bridge],
    ['link', 'set', hubLink, 'up'],
  ]);
  ipBatch([['addr', 'add', `${ns}/16`, 'dev', nsLink], ['link', 'set', nsLink, 'up'], ['link', 'set', 'lo', 'up']], { namespace });
  // The address may have been an earlier namespace's (the same worker's next file): this host would keep sending to
  // that one's link-layer address, gone with it, until its ARP entry ran out.
  ip('neigh', 'flush', 'to', ns, 'dev', hub.bridge);
}

/** Ends everything still running inside the namespace, then removes its veth pair and the namespace; what is gone is skipped. */
export function removeNamespace({ namespace, hubLink }: Pick<Veth, 'namespace' | 'hubLink'>): void {
  let pids: number[] = [];
  try {
    pids = ip('netns', 'pids', namespace).split('\n').filter(Boolean).map(Number);
  } catch {
    /* no such namespace */
  }
  for (const pid of pids) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      /* gone */
    }
  }
  try {
    ipBatch([['link', 'del', hubLink], ['netns', 'del', namespace]], { force: true });
  } catch {
    /* went with the namespace, or already gone */
  }
}
