import type { Duplex } from 'node:stream';
import type { Client } from './adb.js';
import { AccessUnitAssembler, NalSplitter, type AccessUnit } from './annex-b.js';
import { displayOf } from './minicap.js';
import type { LiveFrame } from '../types.js';

/**
 * The phone's own hardware encoder as its live screen: `screenrecord --output-format=h264 -` writes raw H.264 (Annex
 * B) to stdout on every Android a lab still holds, with nothing pushed to the phone. The engine splits the stream into
 * access units and relays them; it never decodes them.
 *
 * What a real screenrecord does, and how it is met here:
 * - it stops at its time limit (180 s at most): the next one starts as soon as it ends, so the viewer keeps the last
 *   picture until the new keyframe, which has the same size (no blank, no jump);
 * - it keeps the orientation it started with: the rotation is watched, and a turn restarts it at the new size;
 * - it writes a picture only when the screen changes, one encoder buffer per write: the access unit under way is taken
 *   as complete when the stream pauses (FLUSH_MS), rather than when the next picture begins, which could be never;
 * - its keyframe interval is long (seconds): a new or lagging viewer's keyframe is the live screen's job (it keeps
 *   the last keyframe and the pictures since).
 */

export interface ScreenrecordOptions {
  /** The longest side of the video, in pixels; the phone's own size when larger. */
  maxSize: number;
  /** Bits per second (screenrecord's --bit-rate); its default (4 to 20 Mbps by version) is far more than a screen needs. */
  bitRate?: number;
  /** screenrecord's --time-limit, 1 to 180 s. */
  timeLimitSeconds?: number;
}

/** Enough for text to stay sharp at 720p while the screen moves; a still screen costs nothing. */
export const DEFAULT_BIT_RATE = 2_000_000;
/** screenrecord's own maximum; tests shorten it with BENCHTOP_SCREENRECORD_TIME_LIMIT to see the restart. */
export const MAX_TIME_LIMIT_S = 180;
/** A pause this long ends the access unit under way: one picture arrives as one write, split only by the transport. */
const FLUSH_MS = 4;
/** How often the rotation is read while screenrecord runs: `dumpsys display` is cheap, and a turn is seen within this. */
const ROTATION_POLL_MS = 1000;

const even = (n: number) => Math.max(2, Math.round(n / 2) * 2);

/** The time limit: the option, else BENCHTOP_SCREENRECORD_TIME_LIMIT, else screenrecord's maximum. */
function timeLimitOf(options: ScreenrecordOptions): number {
  const asked = options.timeLimitSeconds ?? Number(process.env.BENCHTOP_SCREENRECORD_TIME_LIMIT || MAX_TIME_LIMIT_S);
  return Math.min(MAX_TIME_LIMIT_S, Math.max(1, Math.round(asked)));
}

/**
 * Access units of the phone's screen until `signal` aborts, screenrecord restarted at its time limit and on a
 * rotation. Throws when screenrecord ends without a picture (a phone whose encoder refuses the size, or no
 * screenrecord at all), so that the caller can fall back to minicap.
 */
export async function* screenrecordFrames(client: Client, serial: string, options: ScreenrecordOptions, signal: AbortSignal): AsyncGenerator<LiveFrame> {
  const device = client.getDevice(serial);
  const began = performance.now();
  while (!signal.aborted) {
    const display = await displayOf(client, serial);
    const turned = display.rotation % 180 !== 0;
    const screen = turned ? { width: display.height, height: display.width } : { width: display.width, height: display.height };
    const scale = Math.min(1, options.maxSize / Math.max(screen.width, screen.height));
    const width = even(screen.width * scale);
    const height = even(screen.height * scale);
    const command = `screenrecord --output-format=h264 --size ${width}x${height} --bit-rate ${options.bitRate ?? DEFAULT_BIT_RATE} --time-limit ${timeLimitOf(options)} -`;
    const stream = await device.shell(command);
    const run = new Run(stream);
    const stop = () => stream.destroy();
    signal.addEventListener('abort', stop, { once: true });
    let rotated = false;
    const watch = setInterval(() => {
      displayOf(client, serial).then((now) => {
        if (now.rotation === display.rotation) return;
        rotated = true;
        stream.destroy();
      }, () => undefined);
    }, ROTATION_POLL_MS);
    let pictures = 0;
    try {
      for await (const unit of run.units()) {
        pictures++;
        yield {
          data: unit.data, format: 'h264', width, height, source: 'screenrecord', screen,
          video: { keyframe: unit.keyframe, codec: unit.codec, timestamp: Math.round(performance.now() - began) },
        };
      }
    } finally {
      clearInterval(watch);
      signal.removeEventListener('abort', stop);
      stream.destroy();
    }
    if (pictures === 0 && !rotated && !signal.aborted) {
      throw new Error(`screenrecord gave no video: ${run.text.trim().split('\n').slice(-2).join(' ') || 'it exited without output'}`);
    }
  }
}

/** One screenrecord's output as access units, as they complete. */
class Run {
  private readonly nals = new NalSplitter();
  private readonly assembler = new AccessUnitAssembler();
  private readonly ready: AccessUnit[] = [];
  private ended = false;
  private failure: Error | undefined;
  private wake: (() => void) | undefined;
  private timer: NodeJS.Timeout | undefined;

  constructor(stream: Duplex) {
    stream.on('data', (chunk: Buffer) => {
      for (const unit of this.nals.push(chunk)) this.add(unit);
      clearTimeout(this.timer);
      this.timer = setTimeout(() => this.flush(), FLUSH_MS);
    });
    const end = () => {
      clearTimeout(this.timer);
      this.flush();
      this.ended = true;
      this.notify();
    };
    stream.on('end', end);
    stream.on('close', end);
    stream.on('error', (error: Error) => {
      this.failure ??= error;
      end();
    });
  }

  /** What screenrecord printed instead of video, if anything. */
  get text(): string {
    return this.failure?.message ?? this.nals.text;
  }

  async *units(): AsyncGenerator<AccessUnit> {
    for (;;) {
      const next = this.ready.shift();
      if (next) yield next;
      else if (this.ended) return;
      else await new Promise<void>((resolve) => (this.wake = resolve));
    }
  }

  private add(nal: Buffer): void {
    const unit = this.assembler.push(nal);
    if (unit) {
      this.ready.push(unit);
      this.notify();
    }
  }

  private flush(): void {
    const tail = this.nals.flush();
    if (tail) this.add(tail);
    const unit = this.assembler.flush();
    if (unit) {
      this.ready.push(unit);
      this.notify();
    }
  }

  private notify(): void {
    const wake = this.wake;
    this.wake = undefined;
    wake?.();
  }
}
