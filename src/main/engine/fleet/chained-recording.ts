import { spawn } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { mp4VideoSize } from '../domain/mp4-duration.js';
import type { ScreenRecording } from './types.js';

/** The next segment starts this long before the running one would reach the phone's own time limit. */
const LEAD_S = 2;
/** ffmpeg copies the segments' packets (no re-encoding): seconds even for hours of video. */
const JOIN_TIMEOUT_MS = 120_000;
/** Segments of different sizes are encoded again, which takes longer: a recording holds mostly still pictures. */
const FIT_TIMEOUT_MS = 600_000;

/**
 * How long each segment runs: the phone's limit less a lead, or BENCHTOP_RECORDING_SEGMENT_SECONDS (tests shorten it
 * to see the chain without waiting three minutes).
 */
function segmentSeconds(limit: number): number {
  const asked = Number(process.env.BENCHTOP_RECORDING_SEGMENT_SECONDS);
  return asked > 0 ? Math.min(asked, limit) : Math.max(1, limit - LEAD_S);
}

/**
 * A screen recording with no time limit, for a run that lasts as long as it lasts: Android's screenrecord (and the
 * lab's iPhone recorder) stop by themselves at three minutes, so a new segment starts before the running one would,
 * the running one is stopped, and at the end the segments are joined into one MP4. Each segment is given the wall-clock
 * time it covered, so that a still screen at a segment's end (a phone's encoder writes a frame only on change) keeps
 * the later segments in time with the run.
 */
export async function chainedRecording(start: () => Promise<ScreenRecording>): Promise<ScreenRecording> {
  // Undefined only after a segment was set aside and the next could not start yet: the next roll tries again.
  let current: ScreenRecording | undefined = await start();
  let currentStarted = Date.now();
  const segmentMs = segmentSeconds(current.timeLimitSeconds) * 1000;
  const done: Array<{ video: Promise<Buffer>; seconds: number }> = [];
  let ended = false;
  let timer: NodeJS.Timeout | undefined;
  // Rolls and set-asides, one at a time.
  let rolling: Promise<unknown> = Promise.resolve();
  const serially = <T>(step: () => Promise<T>): Promise<T> => {
    const result = rolling.then(step);
    rolling = result.catch(() => undefined);
    return result;
  };
  /** The running segment, finished and kept as covering the time until now. */
  const finish = (now: number) => {
    if (!current) return;
    const video = current.stop();
    video.catch(() => undefined);
    done.push({ video, seconds: (now - currentStarted) / 1000 });
    current = undefined;
    return video;
  };

  const roll = () =>
    void serially(async () => {
      if (ended) return;
      // The next starts before the running one stops, so that nothing happens between them unseen; a phone that
      // cannot start one now keeps the running one (it stops by itself at its limit) and tries again.
      const next = await start().catch(() => undefined);
      if (ended) {
        next?.cancel();
        return;
      }
      if (next) {
        const now = Date.now();
        finish(now);
        current = next;
        currentStarted = now;
      }
      schedule();
    });
  const schedule = () => {
    timer = setTimeout(roll, current ? segmentMs : 1000);
    timer.unref();
  };
  schedule();

  return {
    // None: it runs until stopped.
    timeLimitSeconds: 0,
    cancel: () => {
      ended = true;
      clearTimeout(timer);
      void rolling.then(() => current?.cancel());
    },
    aside: (work) =>
      serially(async () => {
        if (ended) return work();
        clearTimeout(timer);
        // Its file finished before the work: a recorder still running is what the work would kill or wait on.
        const at = Date.now();
        await finish(at)?.catch(() => undefined);
        try {
          return await work();
        } finally {
          if (!ended) {
            const next = await start().catch(() => undefined);
            const now = Date.now();
            // The kept segment covers the time the work took too (its last picture held), so that the video stays
            // in time with the run.
            done.at(-1)!.seconds += (now - at) / 1000;
            if (next && ended) next.cancel();
            else if (next) {
              current = next;
              currentStarted = now;
            }
            schedule();
          }
        }
      }),
    stop: async () => {
      ended = true;
      clearTimeout(timer);
      await rolling;
      finish(Date.now());
      const settled = await Promise.allSettled(done.map((s) => s.video));
      // A segment the phone failed to finish is left out; the rest still make a video. With none, the last one's error.
      const videos = settled.flatMap((r, i) => (r.status === 'fulfilled' ? [{ data: r.value, seconds: done[i]!.seconds }] : []));
      if (videos.length === 0) throw (settled.at(-1) as PromiseRejectedResult).reason;
      if (videos.length === 1) return videos[0]!.data;
      return joinMp4(videos);
    },
  };
}

/**
 * MP4 segments of one recording joined into one, their packets copied (ffmpeg's concat demuxer), each given the
 * duration it covered: the next one's pictures start where the run was then, not where the last picture was.
 * A rotation between segments starts the next at the turned screen's size, which a copy would carry into a file that
 * states one size (a browser then draws it squeezed): then every picture is fitted into the first segment's size,
 * letterboxed, and encoded again.
 */
export async function joinMp4(segments: Array<{ data: Buffer; seconds: number }>): Promise<Buffer> {
  const sizes = segments.map((s) => mp4VideoSize(s.data));
  const first = sizes[0];
  const fit = first && sizes.some((size) => size && (size.width !== first.width || size.height !== first.height)) ? first : undefined;
  const dir = await mkdtemp(join(tmpdir(), 'benchtop-join-'));
  try {
    const lines = ['ffconcat version 1.0'];
    for (const [i, segment] of segments.entries()) {
      await writeFile(join(dir, `${i}.mp4`), segment.data);
      lines.push(`file ${i}.mp4`);
      // The last one lasts as long as its own pictures do.
      if (i < segments.length - 1) lines.push(`duration ${segment.seconds.toFixed(3)}`);
    }
    await writeFile(join(dir, 'list.ffconcat'), `${lines.join('\n')}\n`);
    const encoding = fit
      ? ['-vf', `scale=${fit.width}:${fit.height}:force_original_aspect_ratio=decrease:force_divisible_by=2,pad=${fit.width}:${fit.height}:(ow-iw)/2:(oh-ih)/2,setsar=1`, '-c:v', 'libx264', '-preset', 'veryfast', '-pix_fmt', 'yuv420p']
      : ['-c', 'copy'];
    await run('ffmpeg', ['-hide_banner', '-loglevel', 'error', '-f', 'concat', '-safe', '0', '-i', join(dir, 'list.ffconcat'), ...encoding, '-movflags', '+faststart', '-y', join(dir, 'joined.mp4')], fit ? FIT_TIMEOUT_MS : JOIN_TIMEOUT_MS);
    return await readFile(join(dir, 'joined.mp4'));
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

function run(command: string, args: string[], timeoutMs: number): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { stdio: ['ignore', 'ignore', 'pipe'] });
    let stderr = '';
    child.stderr.setEncoding('utf8').on('data', (text: string) => (stderr = (stderr + text).slice(-2000)));
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    child.once('error', (error: NodeJS.ErrnoException) => {
      clearTimeout(timer);
      reject(error.code === 'ENOENT' ? new Error('Joining the video\'s segments needs ffmpeg on the lab\'s machine: install the Debian package `ffmpeg` (apt-get install -y ffmpeg).') : error);
    });
    child.once('close', (code) => {
      clearTimeout(timer);
      if (code === 0) resolve();
      else reject(new Error(`ffmpeg could not join the video's segments: ${stderr.trim().split('\n').slice(-2).join(' ') || `exit ${code}`}`));
    });
  });
}
