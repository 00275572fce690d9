import { createHash, randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer as createHttpServer, type Server } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import type { Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { build } from 'plist';
import { generate } from 'selfsigned';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseUsbmuxdAddress, startService } from '../../src/main/engine/fleet/ios/usbmux.js';
import { decodePlist, encodePlist, type PlistDict } from '../../src/protocols/apple/plist-wire.js';
import { IMAGE_MOUNTER_SERVICE, PERSONALIZATION_IDENTIFIERS, type SimulatedIPhone } from '../../src/sim/ios/index.js';
import { client, startEngine, type TestEngine } from '../support/engine.js';
import { goIosOrSkip } from '../support/go-ios.js';
import { startIosBus, type IosBus } from '../support/ios-lab.js';
import { waitFor } from '../support/lab.js';
import { remotePorts } from '../support/remote.js';

/** One TSS request as Apple's signing server received it: where go-ios tunnelled to, and the plist it posted. */
interface TssRequest {
  target: string;
  path: string;
  body: Record<string, unknown>;
}

/**
 * A stand-in for Apple's signing server (TSS) behind a local HTTP proxy: go-ios POSTs to
 * https://gs.apple.com/TSS/controller?action=2 with Go's default proxy settings (HTTPS_PROXY) and skips the certificate
 * check, so the proxy takes its CONNECT and answers inside with any certificate, as Apple does: a form-encoded body
 * whose REQUEST_STRING is a plist holding the ApImg4Ticket.
 */
async function startFakeTss(ticket: Buffer): Promise<{ url: string; requests: TssRequest[]; stray: string[]; close(): Promise<void> }> {
  const requests: TssRequest[] = [];
  // Plain-HTTP requests through the proxy: a lab's proxy is elsewhere and cannot reach go-ios's agent on 127.0.0.1.
  const stray: string[] = [];
  const pems = await generate([{ name: 'commonName', value: 'gs.apple.com' }], { keyType: 'rsa', keySize: 2048, algorithm: 'sha256' });
  let target = '';
  const apple = createHttpsServer({ key: pems.private, cert: pems.cert }, (req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      requests.push({ target, path: `${req.method} ${req.url}`, body: decodePlist(Buffer.concat(chunks)) });
      const signed = build({ ApImg4Ticket: ticket } as never);
      res.writeHead(200, { 'Content-Type': 'text/plain' });
      res.end(`STATUS=0&MESSAGE=SUCCESS&REQUEST_STRING=${signed}`);
    });
  });
  const sockets = new Set<Socket>();
  const proxy: Server = createHttpServer((req, res) => {
    stray.push(`${req.method} ${req.url}`);
    res.writeHead(502).end();
  });
  proxy.on('connect', (req, socket: Socket, head: Buffer) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
    target = req.url ?? '';
    socket.write('HTTP/1.1 200 Connection Established\r\n\r\n');
    if (head.length) socket.unshift(head);
    apple.emit('connection', socket);
  });
  await new Promise<void>((resolve) => proxy.listen(0, '127.0.0.1', resolve));
  const { port } = proxy.address() as { port: number };
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    stray,
    async close() {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => proxy.close(() => resolve()));
    },
  };
}

/** One request to a plist service and its answer (4-byte big-endian length, then the plist). */
function ask(socket: Socket, message: PlistDict): Promise<PlistDict> {
  return new Promise((resolve, reject) => {
    let pending = Buffer.alloc(0);
    const onData = (chunk: Buffer) => {
      pending = Buffer.concat([pending, chunk]);
      if (pending.length < 4 || pending.length < 4 + pending.readUInt32BE(0)) return;
      socket.off('data', onData);
      resolve(decodePlist(pending.subarray(4, 4 + pending.readUInt32BE(0))));
    };
    // appium-ios-device hands the connection over unpiped from its usbmux decoder, which leaves it paused.
    socket.on('data', onData).resume();
    socket.once('close', () => reject(new Error('the service hung up')));
    const body = encodePlist(message);
    const header = Buffer.alloc(4);
    header.writeUInt32BE(body.length, 0);
    socket.write(Buffer.concat([header, body]));
  });
}

/**
 * Xcode's personalized image as go-ios reads it (the Restore folder of iOS.ddi): BuildManifest.plist, whose
 * BuildIdentities are matched on ApChipID and ApBoardID against what the phone reports, naming Image.dmg
 * (PersonalizedDMG) and its trust cache (LoadableTrustCache). Made up bytes: nothing here checks their contents.
 */
function fakeDdi(dir: string): { dmg: Buffer; trustCache: Buffer } {
  const dmg = randomBytes(512 * 1024);
  const trustCache = randomBytes(4096);
  const entry = (bytes: Buffer, path: string, name?: string) => ({
    Digest: createHash('sha384').update(bytes).digest(),
    EPRO: true,
    ESEC: true,
    Trusted: true,
    ...(name ? { Name: name } : {}),
    Info: { Path: path },
  });
  const identity = (chip: number, board: number) => ({
    ApBoardID: `0x${board.toString(16)}`,
    ApChipID: `0x${chip.toString(16)}`,
    Manifest: { PersonalizedDMG: entry(dmg, 'Image.dmg', 'DeveloperDiskImage'), LoadableTrustCache: entry(trustCache, 'Image.dmg.trustcache') },
  });
  const { ChipID, BoardId } = PERSONALIZATION_IDENTIFIERS;
  // Another phone's identity first, as Xcode's manifest lists dozens: go-ios has to pick this phone's.
  const manifest = { ProductBuildVersion: '21F79', BuildIdentities: [identity(0x8120, 0x8), identity(ChipID, BoardId)] };
  writeFileSync(join(dir, 'BuildManifest.plist'), build(manifest as never));
  writeFileSync(join(dir, 'Image.dmg'), dmg);
  writeFileSync(join(dir, 'Image.dmg.trustcache'), trustCache);
  return { dmg, trustCache };
}

/**
 * An iOS 17.5 phone without its personalized Developer Disk Image: the lab mounts Xcode's image (BENCHTOP_DDI_PATH)
 * with go-ios 1.2.0 (npm, unchanged), which has Apple's TSS sign it for this phone's ECID and nonce (here a local
 * stand-in reached as HTTPS_PROXY) and sends it to the phone's mobile_image_mounter; then WDA starts through the tunnel.
 */
describe.runIf(goIosOrSkip())('iOS 17.4+: the lab mounts the personalized Developer Disk Image', () => {
  let bus: IosBus;
  let engine: TestEngine;
  let phone: SimulatedIPhone;
  let tss: Awaited<ReturnType<typeof startFakeTss>>;
  let ddi: string;
  let files: { dmg: Buffer; trustCache: Buffer };
  const ticket = randomBytes(1800);
  const proxyBefore = process.env.HTTPS_PROXY;

  // One login per engine, not one per poll: a login hashes the password.
  let signedIn: { api: string; c: ReturnType<typeof client>; owner: string } | undefined;
  const row = async () => {
    if (signedIn?.api !== engine.api) {
      const c = client(engine.api);
      signedIn = { api: engine.api, c, owner: await c.login() };
    }
    const { c, owner } = signedIn;
    const all = (await c.call('GET', '/fleet/devices', { token: owner })).body.data as Array<Record<string, any>>;
    return all.find((p) => p.serial === phone.udid);
  };

  beforeAll(async () => {
    tss = await startFakeTss(ticket);
    // Read by the go-ios processes the engine starts (runGoIos passes its environment on).
    process.env.HTTPS_PROXY = tss.url;
    ddi = mkdtempSync(join(tmpdir(), 'benchtop-ddi-'));
    files = fakeDdi(ddi);
    bus = await startIosBus();
    phone = await bus.plug({ name: 'No Image', version: '17.5.1', wda: false, developerImage: false });
  }, 30_000);
  afterAll(async () => {
    await engine?.stop();
    await bus?.stop();
    await tss?.close();
    if (proxyBefore === undefined) delete process.env.HTTPS_PROXY;
    else process.env.HTTPS_PROXY = proxyBefore;
    if (ddi) rmSync(ddi, { recursive: true, force: true });
  });

  it('without BENCHTOP_DDI_PATH the phone is wda_unavailable with the steps; with it the lab mounts the image TSS signed for this phone and WDA starts through the tunnel', async () => {
    engine = await startEngine({ usbmuxd: parseUsbmuxdAddress(bus.address), remotePorts: remotePorts(2), ddiPath: null });
    const unavailable = await waitFor('the phone explained', async () => {
      const r = await row();
      // While the start is under way the row says so ("starting WebDriverAgent ..."); its end names the image.
      return r?.state === 'wda_unavailable' && /Developer Disk Image/.test(r.steps ?? '') ? r : undefined;
    }, 30_000);
    expect(unavailable.steps).toContain('personalized Developer Disk Image (iOS 17.5.1) is not mounted');
    expect(unavailable.steps).toContain('iOS.ddi/Restore');
    expect(unavailable.steps).toContain('BENCHTOP_DDI_PATH');
    expect(tss.requests).toEqual([]);
    expect(phone.imageMounter.mounts).toEqual([]);
    // go-ios sends all its HTTP through a proxy it is given: its tunnel, runwda and RSD listing get none.
    expect(tss.stray).toEqual([]);

    const nonce = Buffer.from(phone.imageMounter.nonce);
    engine = await engine.restart({ ddiPath: ddi });
    const ready = await waitFor('WDA through the tunnel after the mount', async () => {
      const r = await row();
      return r?.state === 'device' || /Developer Disk Image/.test(r?.steps ?? '') ? r : undefined;
    }, 60_000);
    expect(ready).toMatchObject({ state: 'device', wdaLaunch: 'tunnel' });
    expect(phone.developerImage).toBe(true);
    expect(phone.wdaRunning).toBe(true);

    // Apple's server was asked once, for this phone (its ECID, chip and board) and the nonce it offered.
    expect(tss.requests).toHaveLength(1);
    const [request] = tss.requests;
    expect(request!.target).toBe('gs.apple.com:443');
    expect(tss.stray).toEqual([]);
    expect(request!.path).toBe('POST /TSS/controller?action=2');
    expect(request!.body).toMatchObject({
      ApECID: parseInt(phone.udid.slice(-8), 16),
      ApChipID: PERSONALIZATION_IDENTIFIERS.ChipID,
      ApBoardID: PERSONALIZATION_IDENTIFIERS.BoardId,
      '@ApImg4Ticket': true,
    });
    expect(Buffer.from(request!.body.ApNonce as Uint8Array).equals(nonce)).toBe(true);
    expect(Buffer.from((request!.body.PersonalizedDMG as Record<string, Uint8Array>).Digest!).equals(createHash('sha384').update(files.dmg).digest())).toBe(true);

    // The phone mounted once: Xcode's image, with the ticket the server signed and the image's trust cache.
    expect(phone.imageMounter.mounts).toHaveLength(1);
    const [mount] = phone.imageMounter.mounts;
    expect(mount!.imageType).toBe('Personalized');
    expect(mount!.signature.equals(ticket)).toBe(true);
    expect(mount!.trustCache?.equals(readFileSync(join(ddi, 'Image.dmg.trustcache')))).toBe(true);
    expect(mount!.imageBytes).toBe(files.dmg.length);
    expect(mount!.imageDigest.equals(createHash('sha384').update(files.dmg).digest())).toBe(true);
  }, 120_000);

  it('mobile_image_mounter afterwards: lists the mounted ticket, keeps the manifest for a re-mount, refuses an oversized image and what it does not know', async () => {
    const socket = (await startService(parseUsbmuxdAddress(bus.address), phone.udid, IMAGE_MOUNTER_SERVICE)) as Socket;
    try {
      const listed = await ask(socket, { Command: 'LookupImage', ImageType: 'Personalized' });
      expect((listed.ImageSignature as Uint8Array[]).map((s) => Buffer.from(s).equals(ticket))).toEqual([true]);
      // What go-ios asks first on a re-mount, sparing Apple's server a second request.
      const digest = createHash('sha384').update(files.dmg).digest();
      const manifest = await ask(socket, { Command: 'QueryPersonalizationManifest', PersonalizedImageType: 'DeveloperDiskImage', ImageType: 'DeveloperDiskImage', ImageSignature: digest });
      expect(Buffer.from(manifest.ImageSignature as Uint8Array).equals(ticket)).toBe(true);
      const unknown = await ask(socket, { Command: 'QueryPersonalizationManifest', PersonalizedImageType: 'DeveloperDiskImage', ImageType: 'DeveloperDiskImage', ImageSignature: randomBytes(48) });
      expect(unknown).toMatchObject({ Error: 'InternalError' });
      // Over 64 MiB is refused before a byte of it is taken.
      const big = await ask(socket, { Command: 'ReceiveBytes', ImageType: 'Personalized', ImageSize: 64 * 1024 * 1024 + 1, ImageSignature: ticket });
      expect(big).toMatchObject({ Error: 'InternalError' });
      expect(big.Status).toBeUndefined();
      expect(await ask(socket, { Command: 'MountImage', ImageType: 'Personalized', ImageSignature: ticket, ImageTrustCache: files.trustCache })).toMatchObject({ Error: 'ImageMountFailed' });
      expect(await ask(socket, { Command: 'Frobnicate' })).toEqual({ Error: 'UnknownCommand' });
      expect(phone.imageMounter.mounts).toHaveLength(1);
    } finally {
      socket.destroy();
    }
  });
});
