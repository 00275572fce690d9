import { spawn } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { conflict } from '../../domain/errors.js';
import type { LiveFrame, ScreenRecording } from '../types.js';
import { mjpegFragment, mjpegInitSegment } from './fragmented-mjpeg.js';

/** How long the first frame may take before the recording is refused: WDA's MJPEG server sends one at once. */
const FIRST_FRAME_MS = 5000;

/**
 * An iPhone's screen recording: WebDriverAgent's JPEG frames encoded to H.264 in an MP4 by Debian's ffmpeg (libx264),
 * a maintained encoder in a process of its own, so that encoding never runs on the engine's event loop. A phone has
 * no encoder of its own to ask (Android's screenrecord is one), and an MP4 of JPEG frames, which needs none, is
 * what Chromium refuses to play. Frames go to ffmpeg as they come, each in a fragment stamped with its arrival, and
 * while ffmpeg is behind, frames are dropped rather than queued: memory stays bounded, the video stays in time.
 * It stops by itself at the time limit, as Android's screenrecord does.
 */
/** The recordings running on each iPhone (by UDID), so that releasing the phone ends its ffmpeg at once. */
const running = new Map<string, Set<ScreenRecording>>();

/** Ends the phone's recordings and throws them away: what the screen shows next is the next holder's. */
export function cancelRecordings(udid: string): void {
  for (const recording of running.get(udid) ?? []) recording.cancel();
}

export async function recordScreen(udid: string, frames: (signal: AbortSignal) => AsyncIterable<LiveFrame>, timeLimitSeconds: number): Promise<ScreenRecording> {
  const stopping = new AbortController();
  const feed = frames(stopping.signal)[Symbol.asyncIterator]();
  const first = await firstFrame(feed, stopping);
  const started = Date.now();
  const scratch = await mkdtemp(join(tmpdir(), 'benchtop-recording-'));
  const output = join(scratch, 'recording.mp4');
  // H.264 in 4:2:0 needs an even size; later frames of another size (a rotation) are fitted into this one.
  const width = first.width + (first.width % 2);
  const height = first.height + (first.height % 2);
  const ffmpeg = spawn('ffmpeg', [
    '-hide_banner', '-loglevel', 'error',
    '-f', 'mp4', '-use_tfdt', '1', '-i', 'pipe:0',
    // Each frame keeps the time it came at, in milliseconds: no frames invented or dropped to make a constant rate.
    '-fps_mode', 'passthrough', '-enc_time_base', '1:1000',
    '-vf', `scale=${width}:${height}:force_original_aspect_ratio=decrease,pad=${width}:${height}:(ow-iw)/2:(oh-ih)/2`,
    // ultrafast: the least CPU per frame, for a screen of flat colours; one thread leaves the cores to the lab.
    '-c:v', 'libx264', '-preset', 'ultrafast', '-threads', '1', '-pix_fmt', 'yuv420p',
    // The index first, so that a browser plays the file while it is still downloading.
    '-movflags', '+faststart', '-f', 'mp4', '-y', output,
  ], { stdio: ['pipe', 'ignore', 'pipe'] });
  let stderr = '';
  ffmpeg.stderr.setEncoding('utf8').on('data', (text: string) => (stderr = (stderr + text).slice(-2000)));
  ffmpeg.stdin.on('error', () => undefined);
  const exited = new Promise<number | null>((resolve, reject) => {
    ffmpeg.once('error', reject);
    ffmpeg.once('close', resolve);
  });
  try {
    await new Promise((resolve, reject) => {
      ffmpeg.once('spawn', resolve);
      exited.catch(reject);
    });
  } catch (error) {
    stopping.abort();
    await rm(scratch, { recursive: true, force: true });
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') {
      throw conflict('recording_unsupported', 'Recording an iPhone\'s screen needs ffmpeg on the lab\'s machine: install the Debian package `ffmpeg` (apt-get install -y ffmpeg).');
    }
    throw error;
  }

  let sequence = 1;
  let behind = false;
  const send = (frame: LiveFrame, at: number, durationMs: number) => {
    if (!ffmpeg.stdin.write(mjpegFragment(sequence++, at - started, durationMs, frame.data))) {
      behind = true;
      ffmpeg.stdin.once('drain', () => (behind = false));
    }
  };
  ffmpeg.stdin.write(mjpegInitSegment(first.width, first.height));
  const limit = setTimeout(() => stopping.abort(), timeLimitSeconds * 1000);
  const recorded = (async () => {
    let last = first;
    let lastAt = started;
    send(first, started, 0);
    try {
      for (;;) {
        const next = await feed.next();
        const now = Date.now();
        if (next.done || stopping.signal.aborted) break;
        if (behind) continue;
        send(next.value, now, now - lastAt);
        last = next.value;
        lastAt = now;
      }
    } catch (error) {
      if (!stopping.signal.aborted) throw error;
    } finally {
      clearTimeout(limit);
      stopping.abort();
    }
    // The last picture again at the end, so that the video lasts as long as the recording did.
    const end = Math.min(Date.now(), started + timeLimitSeconds * 1000);
    send(last, end, end - lastAt);
    ffmpeg.stdin.end();
    const code = await exited;
    if (code !== 0) throw new Error(`ffmpeg could not encode the recording (exit ${code}): ${stderr.trim()}`);
    return readFile(output);
  })();
  const recording: ScreenRecording = {
    timeLimitSeconds,
    cancel: () => {
      stopping.abort();
      ffmpeg.kill('SIGKILL');
      void exited.finally(() => rm(scratch, { recursive: true, force: true })).catch(() => undefined);
    },
    stop: async () => {
      stopping.abort();
      try {
        return await recorded;
      } finally {
        await rm(scratch, { recursive: true, force: true });
      }
    },
  };
  const ofPhone = running.get(udid) ?? new Set<ScreenRecording>();
  running.set(udid, ofPhone.add(recording));
  void exited.catch(() => undefined).finally(() => {
    ofPhone.delete(recording);
    if (ofPhone.size === 0 && running.get(udid) === ofPhone) running.delete(udid);
  });
  // A failure is stop()'s to report.
  recorded.catch(() => undefined);
  return recording;
}

/** The feed's first frame, or the reason there is none: a feed that fails at once is an error at the start, not at stop. */
async function firstFrame(feed: AsyncIterator<LiveFrame>, stopping: AbortController): Promise<LiveFrame> {
  let timer: NodeJS.Timeout | undefined;
  try {
    const next = await Promise.race([
      feed.next(),
      new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error('WebDriverAgent sent no screen frame to record.')), FIRST_FRAME_MS))),
    ]);
    if (next.done) throw new Error('WebDriverAgent sent no screen frame to record.');
    return next.value;
  } catch (error) {
    stopping.abort();
    throw error;
  } finally {
    clearTimeout(timer);
  }
}
