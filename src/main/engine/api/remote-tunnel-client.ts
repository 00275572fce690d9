/**
 * The local end of remote connect over LAN sharing: a script a teammate runs with plain Node (18+, no packages). It
 * listens on 127.0.0.1:<localPort>, and carries each connection made there (their adb, or libimobiledevice) inside a
 * WebSocket over the lab's HTTPS port to the phone's listener, so no plaintext adb or usbmuxd crosses the LAN.
 * The lab's certificate is self-signed: the script pins its SHA-256 fingerprint, given on the command line, before it
 * sends the per-checkout secret. CommonJS, since `node -e` evaluates it so.
 *
 * Arguments: <lab origin> <tunnel secret> <certificate SHA-256> <local ports>: one port per listener of the checkout,
 * comma-separated (Android: adb's; iPhone: usbmuxd's, then WebDriverAgent's).
 *
 * The checkout's end (release, or its remote connection closed) is the tunnel URL's 404: the script asks every few
 * seconds, and sees it at each connection, and then stops with one sentence. It used to print the 404 at each of
 * adb's reconnects (51 times in 12 s) and keep running. A lab out of reach for a while is not an end: it keeps trying.
 */
export const TUNNEL_CLIENT_SOURCE = String.raw`'use strict';
const tls = require('tls'), net = require('net'), crypto = require('crypto');
const args = process.argv.slice(1).filter((a) => a !== '--');
const [origin, secret, fingerprint, localPorts] = args;
if (!origin || !secret || !fingerprint || !localPorts) {
  console.error('usage: <lab origin> <secret> <certificate sha256> <local port>[,<local port>]');
  process.exit(2);
}
const lab = new URL(origin);
const MAX_FRAME = 32 * 1024;

function frame(opcode, payload) {
  const mask = crypto.randomBytes(4);
  const n = payload.length;
  const head = n < 126 ? Buffer.from([0x80 | opcode, 0x80 | n]) : Buffer.from([0x80 | opcode, 0x80 | 126, n >> 8, n & 255]);
  const masked = Buffer.alloc(n);
  for (let i = 0; i < n; i++) masked[i] = payload[i] ^ mask[i & 3];
  return Buffer.concat([head, mask, masked]);
}

const CHECK_MS = 3000;
const toLab = () => tls.connect({ host: lab.hostname, port: Number(lab.port || 443), servername: net.isIP(lab.hostname) ? undefined : lab.hostname, rejectUnauthorized: false });
const pinned = (socket) => socket.getPeerCertificate().fingerprint256 === fingerprint;
const tunnelPath = (which) => '/api/v1/remote-connect/tunnel/' + secret + '?port=' + which;
const notFound = (status) => /^HTTP\/1\.1 404/.test(status);

function ended() {
  console.error('Benchtop tunnel: the lab has ended this remote connection (the phone was released, or its remote connection closed), so the tunnel stops.');
  process.exit(1);
}

/** A plain GET of the tunnel URL: 404 once the checkout has ended (426 while it is open), sent after the pin is checked. */
function checkStillOpen() {
  const probe = toLab();
  let head = '';
  probe.on('error', () => probe.destroy());
  probe.once('secureConnect', () => {
    if (!pinned(probe)) return probe.destroy();
    probe.write('GET ' + tunnelPath(0) + ' HTTP/1.1\r\nHost: ' + lab.host + '\r\nConnection: close\r\n\r\n');
  });
  probe.on('data', (chunk) => {
    head += chunk;
    if (!head.includes('\r\n')) return;
    if (notFound(head)) ended();
    probe.destroy();
  });
}

function carry(local, which) {
  local.pause();
  const remote = toLab();
  const close = () => { local.destroy(); remote.destroy(); };
  remote.on('error', (e) => { console.error('tunnel: ' + e.message); close(); });
  local.on('error', close);
  local.on('close', () => remote.destroy());
  remote.on('close', () => local.destroy());
  remote.once('secureConnect', () => {
    if (!pinned(remote)) { console.error('tunnel: the lab\'s certificate is ' + remote.getPeerCertificate().fingerprint256 + ', not ' + fingerprint + '; refusing'); return close(); }
    remote.write('GET ' + tunnelPath(which) + ' HTTP/1.1\r\nHost: ' + lab.host +
      '\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: ' + crypto.randomBytes(16).toString('base64') + '\r\n\r\n');
  });
  let pending = Buffer.alloc(0);
  let open = false;
  remote.on('data', (chunk) => {
    pending = Buffer.concat([pending, chunk]);
    if (!open) {
      const end = pending.indexOf('\r\n\r\n');
      if (end < 0) return;
      const status = pending.subarray(0, end).toString().split('\r\n')[0];
      if (notFound(status)) return ended();
      if (!/^HTTP\/1\.1 101/.test(status)) { console.error('tunnel: the lab answered ' + status + ' (is the phone still open?)'); return close(); }
      open = true;
      pending = pending.subarray(end + 4);
      local.on('data', (data) => {
        for (let i = 0; i < data.length; i += MAX_FRAME) remote.write(frame(2, data.subarray(i, i + MAX_FRAME)));
      });
      local.resume();
    }
    while (pending.length >= 2) {
      const opcode = pending[0] & 15;
      let n = pending[1] & 127, at = 2;
      if (n === 126) { if (pending.length < 4) return; n = pending.readUInt16BE(2); at = 4; }
      else if (n === 127) { if (pending.length < 10) return; n = Number(pending.readBigUInt64BE(2)); at = 10; }
      if (pending.length < at + n) return;
      const payload = pending.subarray(at, at + n);
      pending = pending.subarray(at + n);
      if (opcode === 8) return close();
      if (opcode === 9) remote.write(frame(10, payload));
      else if (opcode === 0 || opcode === 2) local.write(payload);
    }
  });
}

localPorts.split(',').forEach((localPort, which) => {
  net.createServer((local) => carry(local, which)).listen(Number(localPort), '127.0.0.1', () => {
    console.error('Benchtop tunnel: 127.0.0.1:' + localPort + ' now reaches the phone through ' + lab.origin + ' (Ctrl+C to stop)');
  });
});
setInterval(checkStillOpen, CHECK_MS);
`;
