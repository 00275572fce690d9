/**
 * The phone page's Record on both platforms, through the API, played in Debian's Chromium: an Android phone's
 * screenrecord MP4 and an iPhone's recording (WebDriverAgent's frames encoded by the engine) are H.264 that a
 * `video` element plays (readyState 4, currentTime advancing) and that Debian's ffprobe reads. The iPhone
 * recording's encoding cost is measured and printed: ffmpeg's CPU time per second of video, and how long stop takes.
 */
import { readFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseUsbmuxdAddress } from '../../src/main/engine/fleet/ios/usbmux.js';
import { SETTINGS } from '../../src/sim/ios/index.js';
import { client } from '../support/engine.js';
import { ffmpegOrSkip, ffprobe } from '../support/ffmpeg.js';
import { startIosBus, type IosBus } from '../support/ios-lab.js';
import { adbOrSkip, allocateInUse, startLab, type TestLab } from '../support/lab.js';
import { chromiumOrSkip, sharedChromium, newContext, open } from './support/browser.js';

const ready = adbOrSkip() && chromiumOrSkip() && ffmpegOrSkip();

/** CPU time of the children this process has waited for (utime + stime of /proc/self/stat's cutime and cstime), in ms. */
function childrenCpuMs(): number {
  const fields = readFileSync('/proc/self/stat', 'utf8').replace(/^.*\) /, '').split(' ');
  // Counted from the state field (the third of stat(5)): cutime and cstime are stat's 16th and 17th.
  return ((Number(fields[13]) + Number(fields[14])) * 1000) / 100;
}

describe.skipIf(!ready)('recordings play in Chromium', () => {
  let bus: IosBus;
  let lab: TestLab;
  let c: ReturnType<typeof client>;
  let token: string;
  let browser: Browser;
  let page: Page;
  let blank: Server;

  beforeAll(async () => {
    bus = await startIosBus([{ name: 'Record iPhone' }]);
    lab = await startLab([{ model: 'Pixel 7' }], { usbmuxd: parseUsbmuxdAddress(bus.address) });
    c = client(lab.engine.api);
    token = await c.login();
    browser = await sharedChromium();
    page = await (await newContext(browser)).newPage();
    // A plain page of its own: the GUI's Content-Security-Policy is not what is under test here.
    blank = createServer((_, res) => res.end('<!doctype html><title>player</title>'));
    await new Promise<void>((resolve) => blank.listen(0, '127.0.0.1', resolve));
    await open(page, `http://127.0.0.1:${(blank.address() as AddressInfo).port}/`);
  }, 60_000);
  afterAll(async () => {
    await browser?.close();
    blank?.close();
    await lab?.stop();
    await bus?.stop();
  });

  /** Records ~2.5 s while the screen changes, through the phone page's routes; answers the MP4 and how long stop took. */
  async function record(platform: 'android' | 'ios', change: (act: (body: unknown) => Promise<unknown>) => Promise<void>): Promise<{ mp4: Buffer; stopMs: number }> {
    const held = await allocateInUse(c, token, undefined, { platform, timeoutMs: 20_000 });
    const base = `/sessions/${held.session}/devices/${encodeURIComponent(held.serial)}`;
    const act = (body: unknown) => c.call('POST', `${base}/actions`, { token, body });
    expect((await c.call('POST', `${base}/recording`, { token })).status).toBe(201);
    await change(act);
    await new Promise((r) => setTimeout(r, 2500));
    const asked = Date.now();
    const stopped = await fetch(`${lab.engine.api}${base}/recording/stop`, { method: 'POST', headers: { authorization: `Bearer ${token}` } });
    expect([stopped.status, stopped.headers.get('content-type')]).toEqual([200, 'video/mp4']);
    const mp4 = Buffer.from(await stopped.arrayBuffer());
    return { mp4, stopMs: Date.now() - asked };
  }

  /** Plays the MP4 in a `video` element; answers its readyState, and its currentTime when play began and a while later. */
  function play(mp4: Buffer): Promise<{ readyState: number; t1: number; t2: number; error: string | null }> {
    return page.evaluate(async (base64) => {
      const bytes = Uint8Array.from(atob(base64), (ch) => ch.charCodeAt(0));
      const video = document.createElement('video');
      video.muted = true;
      video.src = URL.createObjectURL(new Blob([bytes], { type: 'video/mp4' }));
      document.body.append(video);
      const settle = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
      const deadline = Date.now() + 10_000;
      while (video.readyState < 4 && !video.error && Date.now() < deadline) await settle(50);
      if (video.error) return { readyState: video.readyState, t1: 0, t2: 0, error: video.error.message || String(video.error.code) };
      const readyState = video.readyState;
      await video.play();
      const t1 = video.currentTime;
      // Half a second of video, given up to five seconds of a busy machine's time to play it.
      while (video.currentTime < t1 + 0.5 && !video.ended && Date.now() < deadline + 5000) await settle(50);
      const t2 = video.currentTime;
      video.remove();
      return { readyState, t1, t2, error: null };
    }, mp4.toString('base64'));
  }

  it('an Android phone\'s recording is H.264 that Chromium plays', async () => {
    const { mp4 } = await record('android', async (act) => {
      await act({ type: 'pressButton', button: 'HOME' });
      await act({ type: 'launchApp', packageName: 'com.android.settings' });
    });
    expect(ffprobe({ bytes: mp4 }).streams).toEqual([expect.objectContaining({ codec_name: 'h264', codec_type: 'video', width: 720, height: 1280 })]);
    const played = await play(mp4);
    expect(played.error).toBeNull();
    expect(played.readyState).toBe(4);
    expect(played.t2).toBeGreaterThan(played.t1);
  }, 60_000);

  it('an iPhone\'s recording is H.264 that Chromium plays; its encoding cost is printed', async () => {
    const cpuBefore = childrenCpuMs();
    const { mp4, stopMs } = await record('ios', async (act) => {
      await act({ type: 'pressButton', button: 'HOME' });
      await act({ type: 'launchApp', packageName: SETTINGS });
    });
    // ffmpeg was waited for by the stop: its CPU time is now this process's children's.
    const cpuMs = childrenCpuMs() - cpuBefore;
    const probe = ffprobe({ bytes: mp4 });
    expect(probe.streams).toEqual([expect.objectContaining({ codec_name: 'h264', codec_type: 'video', width: 750, height: 1334 })]);
    const seconds = Number(probe.format.duration);
    expect(seconds).toBeGreaterThan(2);
    console.log(`iPhone recording: ${seconds.toFixed(2)} s of video (${probe.streams[0]!.nb_read_packets} frames, ${Math.round(mp4.length / 1024)} KB), ffmpeg CPU ${cpuMs} ms = ${(cpuMs / seconds).toFixed(0)} ms per second of video; stop answered in ${stopMs} ms`);
    const played = await play(mp4);
    expect(played.error).toBeNull();
    expect(played.readyState).toBe(4);
    expect(played.t2).toBeGreaterThan(played.t1);
  }, 60_000);
});
