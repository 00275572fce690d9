/**
 * The GUI tests run beside tests that make network namespaces (providers, the app server). Chromium cancels the
 * connections it is opening whenever an address of this host comes or goes (net::ERR_NETWORK_CHANGED), so a namespace
 * plugged into the run's hub, its cable pulled and put back, and the namespace taken away must change no address of
 * this host (test/support/netns.ts).
 */
import { describe, expect, it } from 'vitest';
import { netnsOrSkip } from '../support/provider/index.js';
import { hubAddress, ip, makeNamespace, networkHub, removeNamespace } from '../support/netns.js';

const hasNetns = netnsOrSkip();

/** Every address of this host (its own network namespace), one per line, as `ip -o addr` prints them. */
const addresses = () =>
  ip('-o', 'addr', 'show')
    .split('\n')
    .filter(Boolean)
    .map((line) => line.replace(/\s+valid_lft.*$/, '').replace(/^\d+:\s+/, ''))
    .sort();

describe.runIf(hasNetns)("the tests' network hub", () => {
  it("a namespace plugged in, its cable pulled and put back, then taken away, changes no address of this host, nor the hub's own link-layer address; the hub is one of this host's", () => {
    const hub = networkHub();
    const before = addresses();
    // The hub's own link-layer address stays too: the namespaces already plugged in keep sending to it.
    const hubMac = () => /link\/ether (\S+)/.exec(ip('link', 'show', hub.bridge))?.[1];
    const mac = hubMac();
    expect(before.some((line) => line.startsWith(`${hub.bridge} `) && line.includes(` ${hub.address}/16 `))).toBe(true);
    const tag = `${process.pid % 100000}`;
    const veth = { namespace: `bt-hubtest-${tag}`, hubLink: `btx${tag}`, nsLink: `bty${tag}`, ns: hubAddress(250) };
    try {
      makeNamespace(veth);
      expect(addresses()).toEqual(before);
      expect(hubMac()).toBe(mac);
      expect(ip('route', 'get', veth.ns)).toMatch(new RegExp(`dev ${hub.bridge}\\b`));
      ip('link', 'set', veth.hubLink, 'down');
      ip('link', 'set', veth.hubLink, 'up');
      expect(addresses()).toEqual(before);
    } finally {
      removeNamespace(veth);
    }
    expect(addresses()).toEqual(before);
    expect(hubMac()).toBe(mac);
  });
});
