/**
 * The simulated phone's screenrecord read by third-party tools: Debian's adb streams `screenrecord
 * --output-format=h264 -` through a real adb server into Debian's ffprobe, and `adb pull` fetches the MP4 it writes.
 */
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectToAdb, findAdb, SimulatedPhone, startAdbServer, type AdbServer } from '../../src/sim/android/index.js';
import { ffmpegOrSkip, ffprobe, type Probe } from '../support/ffmpeg.js';
import { adbOrSkip, waitFor } from '../support/lab.js';

const ready = adbOrSkip() && ffmpegOrSkip();

describe.skipIf(!ready)('the simulated phone\'s screenrecord', () => {
  let adb: AdbServer;
  let phone: SimulatedPhone;
  let serial: string;
  let scratch: string;

  beforeAll(async () => {
    adb = await startAdbServer();
    phone = new SimulatedPhone({ width: 480, height: 800 });
    serial = await connectToAdb(await phone.start(), adb.port);
    await phone.shell('input keyevent WAKEUP && wm dismiss-keyguard');
    scratch = mkdtempSync(join(tmpdir(), 'benchtop-screenrecord-'));
  }, 60_000);
  afterAll(async () => {
    await phone?.stop();
    await adb?.stop();
    if (scratch) rmSync(scratch, { recursive: true, force: true });
  });

  /** `adb exec-out screenrecord <args>` piped into `ffprobe -i pipe:0`, as a user would type it; with adb's run time. */
  async function streamToFfprobe(args: string[], whileRecording?: (stopped: () => boolean) => Promise<void>): Promise<{ probe: Probe; ms: number }> {
    const started = Date.now();
    const recorder = spawn(findAdb()!, ['-P', String(adb.port), '-s', serial, 'exec-out', 'screenrecord', ...args], { env: adb.env, stdio: ['ignore', 'pipe', 'inherit'] });
    const probe = spawn('ffprobe', ['-v', 'error', '-count_packets', '-show_entries', 'stream=codec_name,codec_type,width,height,nb_read_packets', '-of', 'json', '-i', 'pipe:0'], { stdio: ['pipe', 'pipe', 'inherit'] });
    recorder.stdout.pipe(probe.stdin);
    let out = '';
    probe.stdout.setEncoding('utf8').on('data', (text: string) => (out += text));
    // Listened for now: ffprobe may finish while the taps below are still under way.
    const probed = new Promise((resolve) => probe.once('close', resolve));
    let done = false;
    const recorded = new Promise<number>((resolve) => recorder.once('close', (code) => resolve(code ?? -1))).then((code) => ((done = true), code));
    await whileRecording?.(() => done);
    expect(await recorded).toBe(0);
    const ms = Date.now() - started;
    await probed;
    return { probe: JSON.parse(out) as Probe, ms };
  }

  it('streams raw H.264 to stdout that ffprobe reads at the phone\'s size, stopping by itself at the time limit', async () => {
    const { probe, ms } = await streamToFfprobe(['--output-format=h264', '--time-limit', '3', '-']);
    expect(probe.streams).toEqual([expect.objectContaining({ codec_name: 'h264', codec_type: 'video', width: 480, height: 800 })]);
    // Three seconds of recording, plus the encoder's start and adb; never cut short, never run on.
    expect(ms).toBeGreaterThanOrEqual(2900);
    expect(ms).toBeLessThan(8000);
  }, 60_000);

  it('honours --size, and sends frames only when the screen changes', async () => {
    const still = await streamToFfprobe(['--output-format', 'h264', '--size', '240x400', '--time-limit', '2', '-']);
    expect(still.probe.streams[0]).toMatchObject({ codec_name: 'h264', width: 240, height: 400 });
    const changing = await streamToFfprobe(['--output-format=h264', '--size=240x400', '--time-limit=2', '-'], async (stopped) => {
      for (let i = 0; !stopped(); i++) {
        await phone.shell(`input tap ${40 + (i % 10) * 40} 700`);
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
    });
    const stillFrames = Number(still.probe.streams[0]!.nb_read_packets);
    const changingFrames = Number(changing.probe.streams[0]!.nb_read_packets);
    // A still screen: the first picture, and a new one only if the status bar's clock turned a minute.
    expect(stillFrames).toBeGreaterThanOrEqual(1);
    expect(stillFrames).toBeLessThanOrEqual(2);
    expect(changingFrames).toBeGreaterThanOrEqual(5);
  }, 60_000);

  it('a picture after the screen changed is as sharp as the phone\'s own screencap (PSNR), not starved of bits', async () => {
    // Recorded while the screen changes from the launcher to Settings after the first picture: the second picture is
    // encoded against the first, within the bit rate, as a phone's encoder does it.
    await phone.shell('input keyevent HOME');
    const recorder = spawn(findAdb()!, ['-P', String(adb.port), '-s', serial, 'exec-out', 'screenrecord', '--output-format=h264', '--time-limit', '4', '-'], { env: adb.env, stdio: ['ignore', 'pipe', 'inherit'] });
    const chunks: Buffer[] = [];
    recorder.stdout.on('data', (chunk: Buffer) => chunks.push(chunk));
    const closed = new Promise((resolve) => recorder.once('close', resolve));
    await new Promise((resolve) => recorder.stdout.once('data', resolve));
    await new Promise((resolve) => setTimeout(resolve, 2000));
    await phone.shell('am start -n com.android.settings/.Settings');
    await new Promise((resolve) => setTimeout(resolve, 300));
    const reference = phone.screenshot();
    await closed;
    writeFileSync(join(scratch, 'change.h264'), Buffer.concat(chunks));
    writeFileSync(join(scratch, 'reference.png'), reference);
    // The last picture of the recording (ffmpeg writes each over the one before), against the screencap taken then.
    expect(spawnSync('ffmpeg', ['-v', 'error', '-y', '-i', join(scratch, 'change.h264'), '-update', '1', join(scratch, 'last.png')]).status).toBe(0);
    const psnr = spawnSync('ffmpeg', ['-i', join(scratch, 'last.png'), '-i', join(scratch, 'reference.png'), '-lavfi', 'psnr', '-f', 'null', '-']).stderr.toString();
    const average = Number(/PSNR .*average:([\d.]+|inf)/.exec(psnr)?.[1]?.replace('inf', 'Infinity'));
    // A flat UI with text at 2 Mbps: about 52 dB here (37.8 dB once in a full run, its encoder sharing the cores with
    // two other test files). An encoder told 1000 pictures a second (the input's timestamp rate) gave each picture after
    // the first a thousandth of the bit rate: 33 dB here, unreadable at a phone's size.
    expect(average, psnr.split('\n').filter((l) => l.includes('PSNR')).join(' ')).toBeGreaterThan(36);
  }, 60_000);

  it('writes an H.264 MP4 file that adb pull fetches and ffprobe reads, lasting as long as the recording', async () => {
    const recorded = await adb.run(['-s', serial, 'shell', 'screenrecord', '--time-limit', '2', '--bit-rate', '4M', '/sdcard/Movies/clip.mp4']);
    expect(recorded.code).toBe(0);
    const local = join(scratch, 'clip.mp4');
    expect((await adb.run(['-s', serial, 'pull', '/sdcard/Movies/clip.mp4', local])).code).toBe(0);
    const probe = ffprobe({ path: local });
    expect(probe.format.format_name).toContain('mp4');
    expect(probe.streams).toEqual([expect.objectContaining({ codec_name: 'h264', codec_type: 'video', width: 480, height: 800 })]);
    // Two seconds from the first picture the encoder took (counted from before it, a loaded machine made 0.92 s).
    expect(Number(probe.format.duration)).toBeGreaterThan(1);
    expect(Number(probe.format.duration)).toBeLessThan(2.8);
  }, 60_000);

  it('a reader that hangs up ends screenrecord and its encoder', async () => {
    const recorder = spawn(findAdb()!, ['-P', String(adb.port), '-s', serial, 'exec-out', 'screenrecord', '--output-format=h264', '-'], { env: adb.env, stdio: ['ignore', 'pipe', 'inherit'] });
    await new Promise((resolve) => recorder.stdout.once('data', resolve));
    // A reader that stops reading while the screen keeps changing, then goes.
    recorder.stdout.pause();
    for (let i = 0; i < 20; i++) await phone.shell(`input tap ${40 + i * 20} 700`);
    recorder.kill('SIGKILL');
    await waitFor('screenrecord to end', async () => (await phone.shell('pidof screenrecord')).status !== 0, 10_000);
    await waitFor('its ffmpeg to end', () => spawnSync('pgrep', ['-P', String(process.pid), 'ffmpeg']).status !== 0, 10_000);
  }, 60_000);

  it('refuses what screenrecord refuses', async () => {
    const tooLong = await adb.run(['-s', serial, 'shell', 'screenrecord', '--time-limit', '181', '/sdcard/x.mp4']);
    expect(tooLong.stdout.toString() + tooLong.stderr).toContain('outside acceptable range [1,180]');
    const format = await adb.run(['-s', serial, 'shell', 'screenrecord', '--output-format=gif', '/sdcard/x.mp4']);
    expect(format.stdout.toString() + format.stderr).toContain("Unknown format 'gif'");
  });
});
