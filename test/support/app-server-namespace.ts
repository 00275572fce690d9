import { spawn, type ChildProcess } from 'node:child_process';
import { hubAddress, makeNamespace, networkHub, removeNamespace } from './netns.js';

/**
 * A server of apps that the lab may download (issue 43.1): not on the lab box itself or loopback, which the lab refuses,
 * but in a network namespace plugged into the run's network hub (CI runs as root; netnsOrSkip() in ./provider says
 * otherwise).
 *
 * A file server in a namespace of its own (http on 8080; https on 8443 when `dir` holds tls.json, its { key, cert }): ETags (and 304 to a matching If-None-Match), a 404, a body over the lab's
 * limit (with and without a Content-Length), one that never answers, one that trickles a byte every 100 ms, a
 * redirect to the lab box's own address, and a count of what it was asked.
 */
const serverScript = (maxBytes: number) => `
const http = require('node:http'), https = require('node:https'), fs = require('node:fs'), crypto = require('node:crypto'), path = require('node:path');
const [dir, hub] = process.argv.slice(1);
const hits = [];
const serve = (req, res) => {
  hits.push({ url: req.url, ifNoneMatch: req.headers['if-none-match'] ?? null });
  if (req.url === '/hits') return res.end(JSON.stringify(hits));
  if (req.url === '/silent.apk') return;
  if (req.url === '/big.apk') { res.writeHead(200, { 'content-length': String(${maxBytes} + 1) }); return res.end(Buffer.alloc(${maxBytes} + 1)); }
  if (req.url === '/endless.apk') { res.writeHead(200); const chunk = Buffer.alloc(65536); const send = () => res.write(chunk) ? setImmediate(send) : res.once('drain', send); res.on('error', () => {}); return send(); }
  if (req.url === '/trickle.apk') { res.writeHead(200); const drip = setInterval(() => res.write('x'), 100); return res.on('close', () => clearInterval(drip)); }
  if (req.url === '/to-the-lab.apk') { res.writeHead(302, { location: 'http://' + hub + ':7676/app.apk' }); return res.end(); }
  const file = path.join(dir, path.basename(req.url));
  if (!fs.existsSync(file)) { res.writeHead(404); return res.end('no'); }
  const body = fs.readFileSync(file);
  const etag = '"' + crypto.createHash('sha256').update(body).digest('hex').slice(0, 16) + '"';
  if (req.headers['if-none-match'] === etag) { res.writeHead(304, { etag }); return res.end(); }
  res.writeHead(200, { etag, 'content-type': req.url.endsWith('.apk') ? 'application/vnd.android.package-archive' : 'application/octet-stream', 'content-length': body.length });
  res.end(body);
};
// The same files over TLS on 8443, with the certificate and key the test wrote beside them.
const tls = path.join(dir, 'tls.json');
if (fs.existsSync(tls)) https.createServer(JSON.parse(fs.readFileSync(tls, 'utf8')), serve).listen(8443);
http.createServer(serve).listen(8080, () => console.log('listening'));
`;

export interface Namespace {
  /** The namespace's address: only this host reaches it, through the run's network hub. */
  ns: string;
  /** The lab box's own address on the hub. */
  hub: string;
  stop(): void;
}

/**
 * A namespace plugged into the run's network hub (./netns.ts) and the file server above inside, on port 8080, serving
 * the files of `dir`; `maxBytes` is the lab's asset limit, which its too-large answers pass by one byte.
 */
export async function startServerNamespace(dir: string, maxBytes: number): Promise<Namespace> {
  const tag = `${process.pid % 100000}`;
  const veth = { namespace: `bt-apps-${tag}`, hubLink: `bta${tag}`, nsLink: `btb${tag}`, ns: hubAddress(200) };
  const { namespace: name, ns } = veth;
  const hub = networkHub().address;
  const started: { server?: ChildProcess } = {};
  const stop = () => {
    started.server?.kill('SIGKILL');
    removeNamespace(veth);
  };
  stop();
  makeNamespace(veth);
  const server = spawn('ip', ['netns', 'exec', name, process.execPath, '-e', serverScript(maxBytes), dir, hub], { stdio: ['ignore', 'pipe', 'inherit'] });
  started.server = server;
  // A server that cannot start leaves no namespace behind: the caller never gets one to stop.
  await new Promise<void>((resolve, reject) => {
    server.stdout.once('data', () => resolve());
    server.once('exit', (code) => reject(new Error(`the namespace's server exited (${code})`)));
  }).catch((error: Error) => {
    stop();
    throw error;
  });
  return { ns, hub, stop };
}
