/**
 * The phone page's toolbox through the API, against the real adb server and a simulated phone: a PTY shell over a
 * WebSocket, the file explorer over adb sync, the installed apps with clear data, screen recording to an H.264 MP4 that a
 * box parser and ffprobe read, and a lossless PNG.
 */
import WebSocket from 'ws';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApk } from '../../src/sim/android/apk.js';
import { client, errorCode } from '../support/engine.js';
import { ffmpegOrSkip, ffprobe } from '../support/ffmpeg.js';
import { adbOrSkip, allocateInUse, startLab, waitFor, type TestLab } from '../support/lab.js';
import { mp4Boxes } from '../support/mp4-boxes.js';

const hasAdb = adbOrSkip();

describe.skipIf(!hasAdb)('the phone toolbox API', () => {
  let lab: TestLab;
  let c: ReturnType<typeof client>;
  let token: string;
  let base: string;
  let serial: string;

  beforeAll(async () => {
    lab = await startLab([{ model: 'Pixel 7', osVersion: '14', sdk: 34 }]);
    c = client(lab.engine.api);
    token = await c.login();
    const held = await allocateInUse(c, token);
    serial = held.serial;
    base = `/sessions/${held.session}/devices/${encodeURIComponent(serial)}`;
  }, 60_000);
  afterAll(() => lab?.stop());

  const bytes = (path: string, init: RequestInit = {}) => fetch(lab.engine.api + base + path, { ...init, headers: { authorization: `Bearer ${token}`, ...init.headers } });

  it('a shell with a PTY answers getprop typed into it, and exits with the shell', async () => {
    const ws = new WebSocket(`${lab.engine.api.replace(/^http/, 'ws')}${base}/shell?cols=100&rows=30`, { headers: { authorization: `Bearer ${token}` } });
    let output = '';
    ws.on('message', (data, binary) => { if (binary) output += data.toString(); });
    await new Promise((resolve, reject) => { ws.once('open', resolve); ws.once('error', reject); });
    ws.send(Buffer.from('getprop ro.product.model\r'));
    await waitFor('the answer', () => /getprop ro\.product\.model\r\nPixel 7\r\n/.test(output));
    ws.send(JSON.stringify({ type: 'resize', cols: 120, rows: 40 }));
    const closed = new Promise<number>((resolve) => ws.once('close', (code) => resolve(code)));
    ws.send(Buffer.from('exit\r'));
    expect(await closed).toBe(1000);
  });

  it('files: upload, list and download the same bytes; paths outside the shared folders are refused', async () => {
    const content = Buffer.from(Array.from({ length: 70_000 }, (_, i) => i % 251));
    const put = await bytes('/files/content?path=/sdcard/Download/blob.bin', { method: 'PUT', body: content, headers: { 'content-type': 'application/octet-stream' } });
    expect(put.status).toBe(204);
    const listing = await c.call('GET', `${base}/files?path=/sdcard/Download`, { token });
    expect(listing.body.data).toContainEqual(expect.objectContaining({ name: 'blob.bin', path: '/sdcard/Download/blob.bin', type: 'file', size: content.length }));
    const root = await c.call('GET', `${base}/files?path=/sdcard`, { token });
    expect(root.body.data.find((e: { name: string }) => e.name === 'Download').type).toBe('directory');
    const got = await bytes('/files/content?path=/sdcard/Download/blob.bin');
    expect(Buffer.from(await got.arrayBuffer()).equals(content)).toBe(true);
    expect(lab.phone(serial).readFile('/sdcard/Download/blob.bin')?.equals(content)).toBe(true);

    expect(errorCode(await c.call('GET', `${base}/files?path=/sdcard/../data/data`, { token }))).toBe('path_not_allowed');
    expect(errorCode(await c.call('GET', `${base}/files?path=/sdcard/nothing-here`, { token }))).toBe('file_not_found');
    expect((await bytes('/files/content?path=/sdcard/Download/missing.bin')).status).toBe(404);
    expect((await bytes('/files/content?path=/system/build.prop', { method: 'PUT', body: 'x', headers: { 'content-type': 'application/octet-stream' } })).status).toBe(400);
    // Android's files are one tree, browsed by folder: no app to name.
    expect(errorCode(await c.call('GET', `${base}/files?path=/sdcard&app=com.example.app`, { token }))).toBe('app_not_allowed');
    const byApp = await c.call('GET', `${base}/files/apps`, { token });
    expect([byApp.status, errorCode(byApp)]).toEqual([409, 'files_by_folder']);
  });

  it('files: delete removes a file, and a folder with what is in it; a root folder and a missing path are refused', async () => {
    const content = Buffer.from('to delete');
    for (const path of ['/sdcard/Download/gone.txt', '/sdcard/Download/Old/a.txt', '/sdcard/Download/Old/b.txt']) {
      expect((await bytes(`/files/content?path=${path}`, { method: 'PUT', body: content, headers: { 'content-type': 'application/octet-stream' } })).status).toBe(204);
    }
    expect((await bytes('/files?path=/sdcard/Download/gone.txt', { method: 'DELETE' })).status).toBe(204);
    expect(lab.phone(serial).readFile('/sdcard/Download/gone.txt')).toBeUndefined();
    expect((await bytes('/files?path=/sdcard/Download/Old', { method: 'DELETE' })).status).toBe(204);
    expect(lab.phone(serial).readFile('/sdcard/Download/Old/a.txt')).toBeUndefined();
    const listing = await c.call('GET', `${base}/files?path=/sdcard/Download`, { token });
    expect(listing.body.data.map((e: { name: string }) => e.name)).not.toContain('Old');
    const missing = await bytes('/files?path=/sdcard/Download/gone.txt', { method: 'DELETE' });
    expect([missing.status, ((await missing.json()) as { error: { code: string } }).error.code]).toEqual([404, 'file_not_found']);
    for (const path of ['/sdcard', '/data/local/tmp/', '/sdcard/../system']) {
      const refused = await bytes(`/files?path=${encodeURIComponent(path)}`, { method: 'DELETE' });
      expect([refused.status, ((await refused.json()) as { error: { code: string } }).error.code], path).toEqual([400, 'path_not_allowed']);
    }
  });

  it('apps: the installed ones listed with their stored label; clear data, then uninstall takes it off pm list packages', async () => {
    const apk = buildApk({ packageName: 'com.benchtop.toolbox', label: 'Toolbox Demo', versionName: '1.0' });
    const form = new FormData();
    form.append('file', new Blob([new Uint8Array(apk)]), 'toolbox.apk');
    const uploaded = await (await fetch(`${lab.engine.api}/files/upload`, { method: 'POST', body: form, headers: { authorization: `Bearer ${token}` } })).json() as { id: string };
    await waitFor('the file ready', async () => (await c.call('GET', `/files/${uploaded.id}`, { token })).body.status === 'ready');
    expect((await c.call('POST', `${base}/install`, { token, body: { file: uploaded.id } })).status).toBe(200);
    const apps = (await c.call('GET', `${base}/apps`, { token })).body.data;
    expect(apps).toContainEqual({ packageName: 'com.benchtop.toolbox', label: 'Toolbox Demo' });
    expect((await c.call('POST', `${base}/actions`, { token, body: { type: 'clearAppData', packageName: 'com.benchtop.toolbox' } })).status).toBe(200);
    expect((await c.call('POST', `${base}/actions`, { token, body: { type: 'uninstallApp', packageName: 'com.benchtop.toolbox' } })).status).toBe(200);
    const packages = (await lab.phone(serial).shell('pm list packages')).output.toString();
    expect(packages).not.toContain('com.benchtop.toolbox');
    expect((await c.call('GET', `${base}/apps`, { token })).body.data.map((a: { packageName: string }) => a.packageName)).not.toContain('com.benchtop.toolbox');
  });

  it('records the screen to an H.264 MP4 that a box parser and ffprobe read; one recording at a time', async () => {
    expect(errorCode(await c.call('POST', `${base}/recording/stop`, { token }))).toBe('not_recording');
    const started = await c.call('POST', `${base}/recording`, { token });
    expect([started.status, started.body.timeLimitSeconds]).toEqual([201, 180]);
    expect(errorCode(await c.call('POST', `${base}/recording`, { token }))).toBe('recording_running');
    await c.call('POST', `${base}/actions`, { token, body: { type: 'launchApp', packageName: 'com.android.settings' } });
    await new Promise((r) => setTimeout(r, 300));
    const stopped = await bytes('/recording/stop', { method: 'POST' });
    expect([stopped.status, stopped.headers.get('content-type')]).toEqual([200, 'video/mp4']);
    const mp4 = Buffer.from(await stopped.arrayBuffer());
    const boxes = mp4Boxes(mp4);
    // H.264, as a phone's screenrecord writes it: the index last, and a first frame that is a keyframe (IDR, NAL type 5).
    expect(boxes.types.at(-1)).toBe('moov');
    expect(boxes.sampleEntry).toBe('avc1');
    expect(boxes.samples).toBeGreaterThanOrEqual(2);
    expect(boxes.firstSampleNalTypes).toContain(5);
    if (ffmpegOrSkip()) expect(ffprobe({ bytes: mp4 }).streams[0]).toMatchObject({ codec_name: 'h264', codec_type: 'video', width: 720, height: 1280 });
    // The phone's scratch copy is gone.
    expect((await lab.phone(serial).shell('ls /data/local/tmp')).output.toString()).not.toMatch(/benchtop-.*\.mp4/);
  });

  it('a recording stops at once while another screenrecord (the live screen\'s) goes on', async () => {
    const live = lab.adb.run(['-s', serial, 'exec-out', 'screenrecord --output-format=h264 --time-limit 20 -'], { timeoutMs: 30_000 });
    await waitFor('the live screen\'s screenrecord', async () => (await lab.phone(serial).shell('pidof screenrecord')).output.toString().trim() !== '');
    expect((await c.call('POST', `${base}/recording`, { token })).status).toBe(201);
    await new Promise((r) => setTimeout(r, 500));
    const asked = Date.now();
    const stopped = await bytes('/recording/stop', { method: 'POST' });
    expect(stopped.status).toBe(200);
    expect(mp4Boxes(Buffer.from(await stopped.arrayBuffer())).sampleEntry).toBe('avc1');
    // Seconds to spare on a busy machine, yet far below the 20 s the other screenrecord still had to run.
    expect(Date.now() - asked).toBeLessThan(5000);
    const others = (await lab.phone(serial).shell('pidof screenrecord')).output.toString().trim();
    expect(others.split(' ')).toHaveLength(1);
    await lab.phone(serial).shell(`kill ${others}`);
    expect((await live).code).toBe(0);
  }, 30_000);

  it('a screenshot.png is a lossless PNG captured now', async () => {
    const png = await bytes('/screenshot.png');
    expect(png.headers.get('content-type')).toBe('image/png');
    expect(Buffer.from(await png.arrayBuffer()).subarray(1, 4).toString()).toBe('PNG');
  });
});
