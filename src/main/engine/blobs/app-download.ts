import { lookup } from 'node:dns/promises';
import http, { type IncomingMessage } from 'node:http';
import https from 'node:https';
import { BlockList, isIP } from 'node:net';
import { networkInterfaces } from 'node:os';
import { Transform } from 'node:stream';
import { BlobSourceError, type BlobStore, type StagedBlob } from './blob-store.js';

/*
 * An app the lab downloads itself from an http(s) URL a WebDriver session names, into its file store. The URL is the
 * caller's, the connection the lab's: every address a host resolves to is checked before a byte is sent, and the
 * connection goes to the address that was checked (so a DNS answer that changes between the check and the connect,
 * DNS rebinding, cannot swap it for the lab's own).
 */

/** How a host name becomes addresses; a test gives its own. */
export type Resolver = (host: string) => Promise<Array<{ address: string; family: number }>>;

/** Why the lab did not download an app: a sentence for the client. */
export class DownloadRefused extends Error {}

export interface DownloadOptions {
  /** The asset size limit (BENCHTOP_MAX_ASSET_BYTES). */
  maxBytes: number;
  /** How long the server may take to answer, and between one piece of the body and the next. */
  timeoutMs: number;
  resolve?: Resolver;
  /** The lab box's own addresses, never downloaded from; every interface's unless a test says. */
  ownAddresses?: () => string[];
  /**
   * Certificate authorities an https server may be signed by, instead of Node's own list (a test's private CA). A lab
   * whose artifact server has a private CA starts the engine with NODE_EXTRA_CA_CERTS, which adds to Node's list.
   */
  ca?: string;
  /** A previous download's validators: a 304 answer then means that file is still current. */
  etag?: string;
  lastModified?: string;
}

export type Download =
  | { notModified: true }
  | { notModified: false; content: StagedBlob; filename: string; etag?: string; lastModified?: string };

const MAX_REDIRECTS = 5;

/**
 * The addresses a download may connect to (an allowlist): IPv4 unicast outside 0/8, loopback (127/8) and link-local
 * (169.254/16); IPv6 global unicast (2000::/3) and unique-local (fc00::/7), without the 6to4 and Teredo ranges that
 * can carry any IPv4 address inside. A LAN's artifact server (10/8, 192.168/16) is a download's usual source and
 * passes; the lab box's own addresses never do.
 */
const UNICAST = new BlockList();
UNICAST.addRange('1.0.0.0', '126.255.255.255', 'ipv4');
UNICAST.addRange('128.0.0.0', '169.253.255.255', 'ipv4');
UNICAST.addRange('169.255.0.0', '223.255.255.255', 'ipv4');
UNICAST.addSubnet('2000::', 3, 'ipv6');
UNICAST.addSubnet('fc00::', 7, 'ipv6');
const TUNNELS = new BlockList();
TUNNELS.addSubnet('2002::', 16, 'ipv6');
TUNNELS.addSubnet('2001::', 32, 'ipv6');

function interfaceAddresses(): string[] {
  return Object.values(networkInterfaces()).flatMap((list) => (list ?? []).map((a) => a.address));
}

/** Why the lab will not connect to this address, or undefined when it may. */
export function refusedAddress(address: string, own: readonly string[]): string | undefined {
  const bare = address.replace(/%.*$/, '').toLowerCase();
  // An IPv4 address written as IPv6 (::ffff:127.0.0.1) is that IPv4 address.
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/.exec(bare)?.[1];
  const ip = mapped ?? bare;
  const family = isIP(ip) === 4 ? 'ipv4' : isIP(ip) === 6 ? 'ipv6' : undefined;
  if (!family) return 'not an IP address';
  if (!UNICAST.check(ip, family) || (family === 'ipv6' && TUNNELS.check(ip, family))) return 'a loopback, link-local, multicast or reserved address';
  if (own.some((a) => a.replace(/%.*$/, '').toLowerCase() === ip)) return "one of the lab box's own addresses";
  return undefined;
}

/** The addresses a URL's host stands for, each checked; the first is the one connected to. */
async function checkedAddress(url: URL, options: DownloadOptions): Promise<{ address: string; family: number }> {
  const host = url.hostname.replace(/^\[|\]$/g, '');
  const shown = `${url.protocol}//${url.host}`;
  let addresses: Array<{ address: string; family: number }>;
  if (isIP(host)) addresses = [{ address: host, family: isIP(host) }];
  else {
    try {
      addresses = await (options.resolve ?? ((name) => lookup(name, { all: true, verbatim: true })))(host);
    } catch (error) {
      throw new DownloadRefused(`${shown} could not be resolved (${(error as NodeJS.ErrnoException).code ?? (error as Error).message}).`);
    }
  }
  if (addresses.length === 0) throw new DownloadRefused(`${shown} resolves to no address.`);
  const own = (options.ownAddresses ?? interfaceAddresses)();
  for (const { address } of addresses) {
    const why = refusedAddress(address, own);
    if (why) throw new DownloadRefused(`${shown} is ${address}, ${why}: the lab downloads apps from other hosts only, never from itself.`);
  }
  return addresses[0]!;
}

/** One request, connected to the checked address alone; the answer's headers, or why not. */
async function request(url: URL, options: DownloadOptions, conditional: boolean): Promise<IncomingMessage> {
  const pinned = await checkedAddress(url, options);
  const shown = `${url.protocol}//${url.host}${url.pathname}`;
  const headers: Record<string, string> = { 'user-agent': 'Benchtop (app download)', accept: '*/*' };
  if (conditional && options.etag) headers['if-none-match'] = options.etag;
  if (conditional && options.lastModified) headers['if-modified-since'] = options.lastModified;
  return new Promise((resolve, reject) => {
    const req = (url.protocol === 'https:' ? https : http).request(url, {
      method: 'GET',
      headers,
      agent: false,
      // The certificate is checked against the URL's own name (SNI too), not the address connected to.
      ...(options.ca ? { ca: options.ca } : {}),
      // The connection goes where the check said, whatever the name resolves to now.
      lookup: ((_host: string, opts: { all?: boolean }, done: (...args: unknown[]) => void) =>
        opts.all ? done(null, [pinned]) : done(null, pinned.address, pinned.family)) as never,
    });
    req.setTimeout(options.timeoutMs, () => req.destroy(new DownloadRefused(`${shown} sent nothing for ${options.timeoutMs / 1000} s; the download was given up.`)));
    req.once('response', resolve);
    req.once('error', (error: Error & { code?: string }) => {
      if (error instanceof DownloadRefused) return reject(error);
      const certificate = /^(ERR_TLS_|CERT_|UNABLE_TO_|SELF_SIGNED|DEPTH_ZERO)/.test(error.code ?? '');
      reject(new DownloadRefused(certificate
        ? `${shown} could not be downloaded: ${error.code}, its certificate was not accepted (${error.message}). An artifact server with a private CA: start the lab with NODE_EXTRA_CA_CERTS naming that CA's certificate.`
        : `${shown} could not be downloaded: ${error.code ?? error.message}.`));
    });
    req.end();
  });
}

/**
 * The least a body must average once `graceMs` (the idle time) have passed since it began: a server that trickles a
 * byte at a time, just inside the idle time, would otherwise hold a session start (and its queue place) for as long as
 * it likes. 16 KiB/s is a 50 MB app in under an hour.
 */
export const MIN_BYTES_PER_SECOND = 16 * 1024;

/** Passes at most `max` bytes through, at no less than MIN_BYTES_PER_SECOND after `graceMs`; else fails the stream. */
function bounded(max: number, graceMs: number, shown: string): Transform {
  let seen = 0;
  const began = performance.now();
  return new Transform({
    transform(chunk: Buffer, _encoding, done) {
      seen += chunk.length;
      if (seen > max) return done(new DownloadRefused(`${shown} is larger than the lab's limit of ${max} bytes (BENCHTOP_MAX_ASSET_BYTES).`));
      const seconds = (performance.now() - began) / 1000;
      if (seconds * 1000 > graceMs && seen / seconds < MIN_BYTES_PER_SECOND) {
        return done(new DownloadRefused(`${shown} sent ${seen} bytes in ${seconds.toFixed(0)} s, under ${MIN_BYTES_PER_SECOND / 1024} KiB/s; the download was given up.`));
      }
      done(null, chunk);
    },
  });
}

function filenameOf(url: URL): string {
  let name = url.pathname.split('/').pop() ?? '';
  try {
    name = decodeURIComponent(name);
  } catch {
    // Kept as it came.
  }
  name = name.replace(/[^\w.+-]/g, '_').slice(0, 200);
  return name || 'app';
}

/**
 * Downloads `href` into the blob store (staged, not committed), following up to five redirects, each checked as the
 * first; bounded by `maxBytes` (a Content-Length over it is refused before the body), `timeoutMs` of silence, and
 * MIN_BYTES_PER_SECOND on average once `timeoutMs` have passed.
 */
export async function downloadApp(href: string, blobs: Pick<BlobStore, 'stage'>, options: DownloadOptions): Promise<Download> {
  let url = new URL(href);
  for (let hop = 0; ; hop++) {
    if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new DownloadRefused(`${url.protocol} is not a scheme the lab downloads from: http or https.`);
    const shown = `${url.protocol}//${url.host}${url.pathname}`;
    const response = await request(url, options, hop === 0);
    const status = response.statusCode ?? 0;
    const location = response.headers.location;
    if (status >= 300 && status < 400 && status !== 304 && location) {
      response.resume();
      if (hop === MAX_REDIRECTS) throw new DownloadRefused(`${shown} redirected more than ${MAX_REDIRECTS} times.`);
      url = new URL(location, url);
      continue;
    }
    if (status === 304 && hop === 0 && (options.etag || options.lastModified)) {
      response.resume();
      return { notModified: true };
    }
    if (status < 200 || status >= 300) {
      response.resume();
      throw new DownloadRefused(`${shown} answered ${status} ${response.statusMessage ?? ''}`.trimEnd() + '; the app could not be downloaded.');
    }
    const length = Number(response.headers['content-length']);
    if (Number.isFinite(length) && length > options.maxBytes) {
      response.destroy();
      throw new DownloadRefused(`${shown} is ${length} bytes, larger than the lab's limit of ${options.maxBytes} bytes (BENCHTOP_MAX_ASSET_BYTES).`);
    }
    const body = bounded(options.maxBytes, options.timeoutMs, shown);
    response.on('error', (error) => body.destroy(error));
    response.pipe(body);
    let content: StagedBlob;
    try {
      content = await blobs.stage(body);
    } catch (error) {
      response.destroy();
      const cause = error instanceof BlobSourceError ? error.cause : error;
      if (cause instanceof DownloadRefused) throw cause;
      throw new DownloadRefused(`${shown} stopped sending before the end of the app.`);
    }
    const etag = response.headers.etag;
    const lastModified = response.headers['last-modified'];
    return { notModified: false, content, filename: filenameOf(url), ...(etag ? { etag } : {}), ...(lastModified ? { lastModified } : {}) };
  }
}
