/**
 * An iPhone app's Documents through house_arrest: the engine's file explorer API (list, upload, download, by app) on a
 * simulated iPhone, checked against the phone's own container, with every refusal a 4xx in the API's error body; and
 * the simulated phone's house_arrest read by libimobiledevice's ifuse (`--list-apps`, and `--documents` mounted with
 * FUSE), so that what the engine speaks is what a real client speaks.
 */
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseUsbmuxdAddress } from '../../src/main/engine/fleet/ios/usbmux.js';
import type { SimulatedIPhone } from '../../src/sim/ios/index.js';
import { buildIpa } from '../support/app-fixtures.js';
import { client, startEngine, type TestEngine } from '../support/engine.js';
import { ideviceToolOrSkip, startIosBus, type IosBus } from '../support/ios-lab.js';
import { allocateInUse, uploadReadyApp, waitFor } from '../support/lab.js';

const run = promisify(execFile);
const SHARING = 'com.example.notes';
const PRIVATE = 'com.example.vault';
const ifuse = ideviceToolOrSkip('ifuse', 'ifuse');
/** Larger than AFC's read and write chunks, so that a transfer takes several packets. */
const EXPORT = Buffer.from(Array.from({ length: 300_000 }, (_, i) => (i * 7) % 256));

/** FUSE needs /dev/fuse (and root, or the fuse group): under CI its absence fails, elsewhere the mount is skipped loudly. */
function fuseOrSkip(): boolean {
  if (existsSync('/dev/fuse')) return true;
  const message = '/dev/fuse is missing: ifuse --documents mounts with FUSE (load the fuse module, or give the container the device).';
  if (process.env.CI === 'true') throw new Error(message);
  console.warn(`SKIPPING: ${message}`);
  return false;
}

describe('iPhone file explorer: an app\'s Documents through house_arrest', () => {
  let bus: IosBus;
  let engine: TestEngine;
  let c: ReturnType<typeof client>;
  let owner: string;
  let session: string;
  let phone: SimulatedIPhone;
  const base = () => `/sessions/${session}/devices/${phone.udid}/files`;
  const documents = (app: string) => phone.containers.get(app)!.fs;
  const put = (query: string, body: Buffer) =>
    fetch(`${engine.api}${base()}/content?${query}`, { method: 'PUT', headers: { authorization: `Bearer ${owner}`, 'content-type': 'application/octet-stream' }, body: new Uint8Array(body) });

  beforeAll(async () => {
    bus = await startIosBus([{ name: 'Files iPhone' }]);
    phone = bus.phones[0]!;
    engine = await startEngine({ usbmuxd: parseUsbmuxdAddress(bus.address) });
    c = client(engine.api);
    owner = await c.login();
    await waitFor('the iPhone in the fleet', async () => ((await c.call('GET', '/fleet/devices', { token: owner })).body.data as Array<{ state: string }>).some((p) => p.state === 'device'), 15_000);
    ({ session } = await allocateInUse(c, owner, undefined, { platform: 'ios', timeoutMs: 15_000 }));
    // Two apps installed through the engine: one shares its Documents (UIFileSharingEnabled), one does not.
    for (const [bundleId, displayName, fileSharing] of [[SHARING, 'Field Notes', true], [PRIVATE, 'Vault', false]] as const) {
      const fileId = await uploadReadyApp(c, owner, buildIpa({ bundleId, displayName, fileSharing }), `${bundleId}.ipa`);
      expect((await c.call('POST', `/sessions/${session}/devices/${phone.udid}/install`, { token: owner, body: { file: fileId } })).status).toBe(200);
    }
  }, 60_000);
  afterAll(async () => {
    await engine?.stop();
    await bus?.stop();
  });

  it('lists the apps that share their Documents, by name', async () => {
    const apps = await c.call('GET', `${base()}/apps`, { token: owner });
    expect(apps.status).toBe(200);
    expect(apps.body.data).toEqual([{ packageName: SHARING, name: 'Field Notes' }]);
  });

  it('uploads into the app\'s Documents, lists it, and downloads the same bytes', async () => {
    const bytes = EXPORT;
    const up = await put(`app=${SHARING}&path=/Documents/export.bin`, bytes);
    expect(up.status).toBe(204);
    // On the phone: in that app's container, nowhere else.
    expect(documents(SHARING).read('/Documents/export.bin')?.equals(bytes)).toBe(true);
    expect(phone.media.read('/Documents/export.bin')).toBeUndefined();

    documents(SHARING).dirs.add('/Documents/Inbox');
    const listing = await c.call('GET', `${base()}?app=${SHARING}&path=/Documents`, { token: owner });
    expect(listing.status).toBe(200);
    expect(listing.body.data.map((e: { name: string; type: string; size: number; path: string }) => [e.name, e.type, e.size, e.path])).toEqual([
      ['Inbox', 'directory', 0, '/Documents/Inbox'],
      ['export.bin', 'file', bytes.length, '/Documents/export.bin'],
    ]);
    expect(Date.parse(listing.body.data[1].modifiedAt)).toBeGreaterThan(Date.now() - 60_000);

    const down = await fetch(`${engine.api}${base()}/content?app=${SHARING}&path=/Documents/export.bin`, { headers: { authorization: `Bearer ${owner}` } });
    expect(down.status).toBe(200);
    expect(down.headers.get('content-disposition')).toBe('attachment; filename="export.bin"');
    expect(Buffer.from(await down.arrayBuffer()).equals(bytes)).toBe(true);
    // Every AFC connection the engine opened is closed again.
    await waitFor('house_arrest connections closed', () => phone.serviceConnections.size === 0, 5000);
  });

  it('refuses what house_arrest refuses, and paths outside /Documents, as 4xx with the error body', async () => {
    const code = async (query: string) => {
      const r = await c.call('GET', `${base()}?${query}`, { token: owner });
      return [r.status, r.body.error?.code];
    };
    expect(await code('path=/Documents')).toEqual([400, 'app_required']);
    expect(await code(`app=${PRIVATE}&path=/Documents`)).toEqual([409, 'documents_not_shared']);
    expect(await code('app=com.example.missing&path=/Documents')).toEqual([404, 'app_not_found']);
    expect(await code(`app=${SHARING}&path=/Documents/nothing-here`)).toEqual([404, 'file_not_found']);
    // No climbing to the container's Library (or out of it), whatever the spelling.
    for (const path of ['/Library/Preferences', '/Documents/../Library', '/Documents/../../../../etc', '/', '/sdcard']) {
      expect(await code(`app=${SHARING}&path=${encodeURIComponent(path)}`), path).toEqual([400, 'path_not_allowed']);
    }
    expect(await code('app=bad%20id&path=/Documents')).toEqual([400, 'invalid_request']);
    const missing = await fetch(`${engine.api}${base()}/content?app=${SHARING}&path=/Documents/none.txt`, { headers: { authorization: `Bearer ${owner}` } });
    expect([missing.status, ((await missing.json()) as { error: { code: string } }).error.code]).toEqual([404, 'file_not_found']);
    const escape = await put(`app=${SHARING}&path=/Documents/../Library/Preferences/x.plist`, Buffer.from('x'));
    expect([escape.status, ((await escape.json()) as { error: { code: string } }).error.code]).toEqual([400, 'path_not_allowed']);
    const root = await put(`app=${SHARING}&path=/Documents`, Buffer.from('x'));
    expect(root.status).toBe(400);
    const notShared = await put(`app=${PRIVATE}&path=/Documents/x.txt`, Buffer.from('x'));
    expect([notShared.status, ((await notShared.json()) as { error: { code: string } }).error.code]).toEqual([409, 'documents_not_shared']);
    expect(documents(PRIVATE).read('/Documents/x.txt')).toBeUndefined();
    expect(documents(SHARING).read('/Library/Preferences/x.plist')).toBeUndefined();
  });

  it('deletes a file, and a folder with what is in it, in the app\'s Documents; never /Documents itself', async () => {
    const del = (query: string) => fetch(`${engine.api}${base()}?${query}`, { method: 'DELETE', headers: { authorization: `Bearer ${owner}` } });
    expect((await put(`app=${SHARING}&path=/Documents/Old/a.txt`, Buffer.from('a'))).status).toBe(404);
    documents(SHARING).dirs.add('/Documents/Old');
    expect((await put(`app=${SHARING}&path=/Documents/Old/a.txt`, Buffer.from('a'))).status).toBe(204);
    expect((await put(`app=${SHARING}&path=/Documents/gone.txt`, Buffer.from('b'))).status).toBe(204);
    expect((await del(`app=${SHARING}&path=/Documents/gone.txt`)).status).toBe(204);
    expect(documents(SHARING).read('/Documents/gone.txt')).toBeUndefined();
    expect((await del(`app=${SHARING}&path=/Documents/Old`)).status).toBe(204);
    expect(documents(SHARING).read('/Documents/Old/a.txt')).toBeUndefined();
    expect(documents(SHARING).dirs.has('/Documents/Old')).toBe(false);
    const code = async (r: Response) => [r.status, ((await r.json()) as { error: { code: string } }).error.code];
    expect(await code(await del(`app=${SHARING}&path=/Documents/gone.txt`))).toEqual([404, 'file_not_found']);
    expect(await code(await del(`app=${SHARING}&path=/Documents`))).toEqual([400, 'path_not_allowed']);
    expect(await code(await del(`app=${SHARING}&path=/Documents/..`))).toEqual([400, 'path_not_allowed']);
    expect(await code(await del(`app=${PRIVATE}&path=/Documents/x`))).toEqual([409, 'documents_not_shared']);
    // What the earlier test uploaded is still there.
    expect(documents(SHARING).read('/Documents/export.bin')?.length).toBe(EXPORT.length);
  });

  it('the simulated phone\'s house_arrest is sandboxed as a real one: VendDocuments reaches /Documents only', async () => {
    // Straight to the phone with the engine's own client: the container's root shows Documents alone, Library is denied.
    const { documentsService } = await import('../../src/main/engine/fleet/ios/usbmux.js');
    const afc = await documentsService(parseUsbmuxdAddress(bus.address), phone.udid, SHARING);
    try {
      expect((await afc.listDirectory('/')).filter((n) => n !== '.' && n !== '..')).toEqual(['Documents']);
      await expect(afc.listDirectory('/Library')).rejects.toThrow(/PERMISSION_DENIED/);
    } finally {
      afc.close();
    }
  });

  describe.runIf(ifuse)('libimobiledevice\'s ifuse against the simulated iPhone', () => {
    const env = () => ({ ...process.env, USBMUXD_SOCKET_ADDRESS: bus.address });

    it('ifuse --list-apps lists the sharing app and not the other', async () => {
      const { stdout } = await run('ifuse', ['--list-apps', '-u', phone.udid], { env: env(), timeout: 10_000 });
      expect(stdout).toContain(SHARING);
      expect(stdout).toContain('Field Notes');
      expect(stdout).not.toContain(PRIVATE);
    });

    it('ifuse --documents refuses an app that does not share them, with the phone\'s InstallationLookupFailed', async () => {
      const dir = mkdtempSync(join(tmpdir(), 'benchtop-ifuse-'));
      try {
        const failed = await run('ifuse', [dir, '-u', phone.udid, '--documents', PRIVATE], { env: env(), timeout: 10_000 }).then(() => undefined, (e: { stderr: string }) => e);
        expect(failed?.stderr).toContain('ERROR: InstallationLookupFailed');
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    });

    it.runIf(fuseOrSkip())('ifuse --documents mounts the app\'s Documents: it reads what the engine wrote, and the engine reads what it writes', async () => {
      const dir = mkdtempSync(join(tmpdir(), 'benchtop-ifuse-'));
      // Foreground (-f), so that this test owns the process; every read of the mount goes through a child process,
      // since this process serves the phone.
      let mount: ChildProcess | undefined = spawn('ifuse', [dir, '-f', '-u', phone.udid, '--documents', SHARING], { env: env(), stdio: 'ignore' });
      try {
        await waitFor('the mount', async () => (await readFile('/proc/mounts', 'utf8')).includes(` ${dir} `), 10_000);
        const sh = (script: string) => run('sh', ['-c', script], { timeout: 10_000 }).then((r) => r.stdout);
        expect((await sh(`ls -1 ${dir}`)).split('\n').filter(Boolean)).toEqual(['Inbox', 'export.bin']);
        // The bytes the engine uploaded, read by libimobiledevice's AFC.
        expect(await sh(`sha256sum < ${dir}/export.bin`)).toBe(`${createHash('sha256').update(EXPORT).digest('hex')}  -\n`);
        await sh(`printf 'written by ifuse' > ${dir}/Inbox/from-ifuse.txt`);
        const listing = await c.call('GET', `${base()}?app=${SHARING}&path=/Documents/Inbox`, { token: owner });
        expect(listing.body.data.map((e: { name: string }) => e.name)).toEqual(['from-ifuse.txt']);
        const down = await fetch(`${engine.api}${base()}/content?app=${SHARING}&path=/Documents/Inbox/from-ifuse.txt`, { headers: { authorization: `Bearer ${owner}` } });
        expect(await down.text()).toBe('written by ifuse');
        await run('fusermount', ['-u', dir], { timeout: 10_000 });
        await waitFor('ifuse to exit', () => mount?.exitCode !== null, 5000);
        mount = undefined;
      } finally {
        if (mount) {
          await run('fusermount', ['-uz', dir]).catch(() => undefined);
          mount.kill();
        }
        rmSync(dir, { recursive: true, force: true });
      }
    });
  });
});
