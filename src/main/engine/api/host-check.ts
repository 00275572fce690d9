import { isIP } from 'node:net';
import { hostname } from 'node:os';
import type { FastifyRequest } from 'fastify';
import { forbidden } from '../domain/errors.js';
import type { App } from './http.js';

/** A Host header: a DNS name or IPv4 address, or an IPv6 address in brackets, each with an optional port. */
const HOST_HEADER = /^(?:([a-z0-9](?:[a-z0-9.-]*[a-z0-9])?)\.?|\[([0-9a-f:.]+)\])(?::\d{1,5})?$/;
/** Accepted Host values seen so far, so that the check costs one set lookup per request after the first. */
const CACHE_LIMIT = 64;

/**
 * Whether a request's Host names this lab. A page on attacker.example whose name is rebound to 127.0.0.1 sends
 * `Host: attacker.example`: refusing names the lab is not reached by defeats DNS rebinding. Accepted: loopback
 * names (localhost and *.localhost, which browsers never resolve through DNS), any IP address (a browser that sends
 * an address as Host really is talking to that address, so no rebinding is involved: this covers every address
 * LAN sharing advertises, and the ones DHCP hands out later), this machine's host name (what LAN sharing advertises
 * besides its addresses), and the names the lab owner lists in BENCHTOP_ALLOWED_HOSTS, where a leading dot
 * (`.lab.example.com`) takes that domain and every name under it.
 */
export function hostAllowed(header: string, ownerNames: readonly string[], machineName = hostname()): boolean {
  const match = HOST_HEADER.exec(header.toLowerCase());
  if (!match) return false;
  const [, name, ipv6] = match;
  if (ipv6 !== undefined) return isIP(ipv6) === 6;
  if (isIP(name!) === 4) return true;
  if (name === 'localhost' || name!.endsWith('.localhost')) return true;
  if (name === machineName.toLowerCase()) return true;
  return ownerNames.some((allowed) => {
    const a = allowed.toLowerCase();
    return a.startsWith('.') ? name === a.slice(1) || name!.endsWith(a) : name === a;
  });
}

/** Refuses, before anything else looks at it, every request whose Host the lab is not reached by. */
export function checkHost(app: App, ownerNames: readonly string[]): void {
  const machineName = hostname();
  const accepted = new Set<string>();
  app.addHook('onRequest', (request: FastifyRequest, _reply, done) => {
    const host = request.headers.host;
    // Browsers always send Host; a client without one (HTTP/1.0) is no web page and cannot be rebound.
    if (host === undefined || accepted.has(host)) return done();
    if (!hostAllowed(host, ownerNames, machineName)) {
      return done(forbidden('host_not_allowed', `Benchtop does not answer to the host name in "Host: ${host.slice(0, 100)}". ` +
        'Reach it by an address, localhost or this machine\'s name, or add the name to BENCHTOP_ALLOWED_HOSTS.'));
    }
    if (accepted.size < CACHE_LIMIT) accepted.add(host);
    done();
  });
}
