import { execFileSync } from 'node:child_process';

/** `ip` from iproute2, its output as text; a failure throws with ip's own message on stderr. */
export const ip = (...args: string[]) => execFileSync('ip', args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });

/**
 * A network namespace joined to this host only by a veth pair on a /30 of its own: `hubLink` (this host's end, at
 * `hub`) and `nsLink` (the namespace's, at `ns`), with the namespace's loopback up and no route beyond the /30.
 */
export interface Veth {
  namespace: string;
  hubLink: string;
  nsLink: string;
  hub: string;
  ns: string;
}

/** Makes the namespace and its veth pair; a half-made one is for `removeNamespace` to take away. */
export function makeNamespace({ namespace, hubLink, nsLink, hub, ns }: Veth): void {
  ip('netns', 'add', namespace);
  ip('link', 'add', hubLink, 'type', 'veth', 'peer', 'name', nsLink);
  ip('link', 'set', nsLink, 'netns', namespace);
  // No IPv6 link-local address on this host's end: its arrival, and its duplicate-address check ending a second later,
  // are two more address changes on this host, and Chromium cancels what a GUI test has in flight on each
  // (net::ERR_NETWORK_CHANGED). A kernel without IPv6 has no such address to stop.
  try {
    ip('link', 'set', hubLink, 'addrgenmode', 'none');
  } catch {
    /* IPv6 is off here */
  }
  ip('addr', 'add', `${hub}/30`, 'dev', hubLink);
  ip('link', 'set', hubLink, 'up');
  ip('-n', namespace, 'addr', 'add', `${ns}/30`, 'dev', nsLink);
  ip('-n', namespace, 'link', 'set', nsLink, 'up');
  ip('-n', namespace, 'link', 'set', 'lo', 'up');
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
  for (const args of [['link', 'del', hubLink], ['netns', 'del', namespace]]) {
    try {
      ip(...args);
    } catch {
      /* went with the namespace, or already gone */
    }
  }
}
