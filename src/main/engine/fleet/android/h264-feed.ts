import type { Duplex } from 'node:stream';
import { readAll, type Client } from './adb.js';
import { AccessUnitAssembler, NalSplitter, picturesBegun, type AccessUnit } from './annex-b.js';
import { displayOf } from './minicap.js';
import type { LiveFrame } from '../types.js';

/**
 * The phone's own hardware encoder as its live screen: `screenrecord --output-format=h264 -` writes raw H.264 (Annex
 * B) to stdout on every Android a lab still holds, with nothing pushed to the phone. The engine splits the stream into
 * access units and relays them; it never decodes them.
 *
 * What a real screenrecord does, and how it is met here:
 * - it stops at its time limit (180 s at most): the next one starts before that and takes over at its first keyframe,
 *   which has the same size (no blank, no jump, no gap);
 * - it keeps the orientation it started with: the rotation is watched, and a turn restarts it at the new size;
 * - it writes a picture only when the screen changes, one encoder buffer per write: the access unit under way is taken
 *   as complete when the stream pauses (FLUSH_MS), rather than when the next picture begins, which could be never;
 *   or at once, where the chunk it came in shows that the picture's last write has arrived (wholePicture()), and a
 *   P picture that came whole goes out as the very bytes that came (AccessUnitAssembler.whole());
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
  /**
   * The stream's chunks end where the adb server's writes end: its server is on this machine's loopback and nothing
   * re-cuts the bytes on the way (a provider's SSH channel or a network can). Only then may a chunk's shape end a
   * picture without the FLUSH_MS pause.
   */
  writesIntact?: boolean;
}

/** Enough for text to stay sharp at 720p while the screen moves; a still screen costs nothing. */
export const DEFAULT_BIT_RATE = 2_000_000;
/** screenrecord's own maximum; tests shorten it with BENCHTOP_SCREENRECORD_TIME_LIMIT to see the restart. */
export const MAX_TIME_LIMIT_S = 180;
/** A pause this long ends the access unit under way: one picture arrives as one write, split only by the transport. */
export const FLUSH_MS = 4;
/**
 * screenrecord hands each encoder buffer (one access unit) to fwrite and then fflush. bionic's stdio buffers stdout
 * in blocks of 1024 bytes (BUFSIZ) or of the pipe's or socket's st_blksize (a page, 4096 or more): a picture smaller
 * than a block leaves in one write(), a larger one as whole blocks and then the rest. A write of at most PIPE_BUF
 * (4096) bytes reaches adbd whole, adbd sends what one read gave it as one packet, and the lab's adb server writes each
 * packet's data to its socket whole, which on loopback arrives as one segment.
 */
const STDIO_BLOCK = 1024;
const WHOLE_WRITE_MAX = 4096;

/**
 * Whether `chunk`, read while nothing of an earlier picture waits (the stream was idle, or the last chunk was whole
 * too) and holding one picture (the caller counts them), is by its shape the whole picture as screenrecord wrote it:
 * it begins with a start code, is under WHOLE_WRITE_MAX, and is not a whole number of stdio blocks (a picture cut
 * after one of its blocks would be).
 * Its last write has then arrived and nothing of the picture is still on the way: it can go out without the pause that
 * cost the engine an event-loop wake per picture (and the viewer FLUSH_MS). Anything else waits for the pause.
 */
export function wholePicture(chunk: Buffer): boolean {
  const startCode = chunk[0] === 0 && chunk[1] === 0 && (chunk[2] === 1 || (chunk[2] === 0 && chunk[3] === 1));
  return startCode && chunk.length < WHOLE_WRITE_MAX && chunk.length % STDIO_BLOCK !== 0;
}

/** The next screenrecord starts this long before the running one reaches its time limit. */
const OVERLAP_MS = 1500;
/**
 * How often the phone reads its rotation while screenrecord runs, for a turn it makes by itself (an app, the
 * accelerometer); a turn made through the driver is seen at once (rotated()).
 */
const ROTATION_POLL_MS = 2000;
/**
 * The phone reads its rotation in a loop of its own, over one shell that stays open: a new adb shell for each read
 * cost the engine more CPU than relaying the video did. It prints the display's line only when the rotation is not
 * `degrees`, the one the engine knows: a phone that keeps its orientation wakes the engine for nothing (a line every
 * 2 s was 0.5 of the 30 wakes a second that one H.264 viewer costs, and JPEG's feed has no such loop).
 */
const rotationWatch = (degrees: number) => `while true; do ${rotationRead(degrees)}; sleep ${ROTATION_POLL_MS / 1000}; done`;
/** One of the loop's reads: the display's line when its rotation is not `degrees`, else nothing. */
export const rotationRead = (degrees: number) => `dumpsys display | grep -m 1 mBaseDisplayInfo | grep -v 'rotation ${degrees / 90}'`;
const ROTATION_RE = /mBaseDisplayInfo=.*?rotation (\d)/;
/** The display's rotation in degrees, from `dumpsys display` output or one of its lines; undefined when it names none. */
function degreesIn(text: string): number | undefined {
  const rotation = ROTATION_RE.exec(text)?.[1];
  return rotation === undefined ? undefined : (Number(rotation) & 3) * 90;
}

/**
 * Calls `onRotation` with the display's rotation in degrees when the phone reads one other than the last it knew
 * (`degrees` at first), until stopped. After a turn, the phone's loop starts over to print what differs from the new
 * rotation.
 */
function watchRotation(client: Client, serial: string, degrees: number, onRotation: (degrees: number) => void): () => void {
  let stopped = false;
  let known = degrees;
  let stream: Duplex | undefined;
  let retry: NodeJS.Timeout | undefined;
  const open = () => {
    client.getDevice(serial).shell(rotationWatch(known)).then((opened: Duplex) => {
      if (stopped) return void opened.destroy();
      stream = opened;
      let pending = '';
      let turned = false;
      opened.on('data', (chunk: Buffer) => {
        // Lines are short; a phone that prints something else without end is not kept in memory.
        pending = (pending + chunk.toString('utf8')).slice(-4096);
        for (let end = pending.indexOf('\n'); end !== -1; end = pending.indexOf('\n')) {
          const now = degreesIn(pending.slice(0, end));
          pending = pending.slice(end + 1);
          if (now === undefined || turned || now === known) continue;
          known = now;
          turned = true;
          onRotation(now);
          opened.destroy();
        }
      });
      opened.on('error', () => undefined);
      // After a turn, the loop starts over at once for the new rotation; a loop that ended by itself (the phone's
      // shell was killed) is read again a moment later.
      opened.on('close', () => {
        if (!stopped) retry = setTimeout(open, turned ? 0 : ROTATION_POLL_MS);
      });
    }, () => {
      if (!stopped) retry = setTimeout(open, ROTATION_POLL_MS);
    });
  };
  open();
  return () => {
    stopped = true;
    clearTimeout(retry);
    stream?.destroy();
  };
}

/** The screenrecord runs watching each phone, by client and serial: what a rotation through the driver wakes. */
const watchers = new WeakMap<Client, Map<string, Set<() => void>>>();

function onRotation(client: Client, serial: string, check: () => void): () => void {
  let bySerial = watchers.get(client);
  if (!bySerial) watchers.set(client, (bySerial = new Map()));
  const set = bySerial.get(serial) ?? new Set();
  bySerial.set(serial, set.add(check));
  return () => {
    set.delete(check);
    if (set.size === 0) bySerial.delete(serial);
  };
}

/** The phone was just turned through the driver: its screenrecord restarts at the new size now, not at the next poll. */
export function rotated(client: Client, serial: string): void {
  // A phone turns its display a moment after the setting changes: looked at again until it has.
  for (const check of watchers.get(client)?.get(serial) ?? []) for (const ms of ROTATION_RECHECK_MS) setTimeout(check, ms);
}
const ROTATION_RECHECK_MS = [0, 300, 1000];

/** The display's rotation in degrees, from one `dumpsys display`. */
async function rotationOf(client: Client, serial: string): Promise<number> {
  const display = (await readAll(await client.getDevice(serial).shell('dumpsys display'))).toString('utf8');
  return degreesIn(display) ?? 0;
}

/**
 * Holds on each phone's screenrecord runs (by client and serial): while one lasts, a live screen whose screenrecord was
 * ended does not start another. Appium's start/stopRecordingScreen end every screenrecord on the phone and wait until
 * none is left; one that came back meanwhile failed the suite's call ("Unable to stop the background screen
 * recording") for whoever watched the run.
 */
const holds = new WeakMap<Client, Map<string, { count: number; released: Promise<void>; release: () => void }>>();

/** Holds the phone's live-screen screenrecord back until the answer is called (calls nest). */
export function holdScreenrecord(client: Client, serial: string): () => void {
  let bySerial = holds.get(client);
  if (!bySerial) holds.set(client, (bySerial = new Map()));
  let hold = bySerial.get(serial);
  if (!hold) {
    let release!: () => void;
    const released = new Promise<void>((resolve) => (release = resolve));
    bySerial.set(serial, (hold = { count: 0, released, release }));
  }
  hold.count++;
  let done = false;
  return () => {
    if (done) return;
    done = true;
    if (--hold.count > 0) return;
    bySerial.delete(serial);
    hold.release();
  };
}

/** Waits while the phone's screenrecord is held back, or until `signal` aborts. */
async function unheld(client: Client, serial: string, signal: AbortSignal): Promise<void> {
  for (let hold = holds.get(client)?.get(serial); hold && !signal.aborted; hold = holds.get(client)?.get(serial)) {
    await new Promise<void>((resolve) => {
      const done = () => {
        signal.removeEventListener('abort', done);
        resolve();
      };
      signal.addEventListener('abort', done, { once: true });
      void hold!.released.then(done);
    });
  }
}

const even = (n: number) => Math.max(2, Math.round(n / 2) * 2);

/** The time limit: the option, else BENCHTOP_SCREENRECORD_TIME_LIMIT, else screenrecord's maximum. */
function timeLimitOf(options: ScreenrecordOptions): number {
  const asked = options.timeLimitSeconds ?? Number(process.env.BENCHTOP_SCREENRECORD_TIME_LIMIT || MAX_TIME_LIMIT_S);
  return Math.min(MAX_TIME_LIMIT_S, Math.max(1, Math.round(asked)));
}

/** The video's geometry for the display as it is now. */
async function geometryOf(client: Client, serial: string, maxSize: number) {
  const display = await displayOf(client, serial);
  const turned = display.rotation % 180 !== 0;
  const screen = turned ? { width: display.height, height: display.width } : { width: display.width, height: display.height };
  const scale = Math.min(1, maxSize / Math.max(screen.width, screen.height));
  return { rotation: display.rotation, screen, width: even(screen.width * scale), height: even(screen.height * scale) };
}
type Geometry = Awaited<ReturnType<typeof geometryOf>>;

/**
 * Access units of the phone's screen until `signal` aborts, screenrecord restarted at its time limit and on a
 * rotation. The restart at the time limit overlaps: the next screenrecord starts OVERLAP_MS before the running one
 * stops, and takes over at its first keyframe, so that the viewer sees no gap while a new encoder starts (hundreds of
 * ms on a phone). Throws when screenrecord ends without a picture (a phone whose encoder refuses the size, or no
 * screenrecord at all), so that the caller can fall back to minicap.
 */
export async function* screenrecordFrames(client: Client, serial: string, options: ScreenrecordOptions, signal: AbortSignal): AsyncGenerator<LiveFrame> {
  const device = client.getDevice(serial);
  const began = performance.now();
  const limit = timeLimitOf(options);
  const overlapMs = Math.min(OVERLAP_MS, (limit * 1000) / 2);
  let wake: (() => void) | undefined;
  const notify = () => {
    const w = wake;
    wake = undefined;
    w?.();
  };
  const start = async (): Promise<ScreenrecordRun> => {
    await unheld(client, serial, signal);
    const geometry = await geometryOf(client, serial, options.maxSize);
    const command = `screenrecord --output-format=h264 --size ${geometry.width}x${geometry.height} --bit-rate ${options.bitRate ?? DEFAULT_BIT_RATE} --time-limit ${limit} -`;
    return new ScreenrecordRun(await device.shell(command), geometry, notify, options.writesIntact === true);
  };
  let current = await start();
  let next: ScreenrecordRun | undefined;
  let successor: NodeJS.Timeout | undefined;
  const planSuccessor = () => {
    clearTimeout(successor);
    successor = setTimeout(() => {
      start().then((run) => {
        if (signal.aborted || next) run.stop();
        else next = run;
        notify();
      }, () => undefined);
    }, limit * 1000 - overlapMs);
  };
  planSuccessor();
  const turned = (now: number) => {
    if (now === current.geometry.rotation) return;
    current.rotated = true;
    current.stop();
  };
  const check = () => void rotationOf(client, serial).then(turned, () => undefined);
  const stopWatching = watchRotation(client, serial, current.geometry.rotation, turned);
  const unwatch = onRotation(client, serial, check);
  const stop = () => notify();
  signal.addEventListener('abort', stop, { once: true });
  try {
    while (!signal.aborted) {
      if (next?.hasPicture) {
        current.stop();
        current = next;
        next = undefined;
        planSuccessor();
      }
      const unit = current.take();
      if (unit) {
        const { width, height, screen } = current.geometry;
        yield {
          data: unit.data, format: 'h264', width, height, source: 'screenrecord', screen,
          video: { keyframe: unit.keyframe, codec: unit.codec, timestamp: Math.round(performance.now() - began) },
        };
        continue;
      }
      if (current.ended) {
        if (current.pictures === 0 && !current.rotated) {
          throw new Error(`screenrecord gave no video: ${current.text.trim().split('\n').slice(-2).join(' ') || 'it exited without output'}`);
        }
        // At the time limit the successor, if it has started, takes over at its first picture; after a rotation, or
        // when it has not started yet, a new one starts now.
        if (next && !current.rotated) {
          current = next;
          next = undefined;
        } else {
          next?.stop();
          next = undefined;
          current = await start();
        }
        planSuccessor();
        continue;
      }
      await new Promise<void>((resolve) => (wake = resolve));
    }
  } finally {
    clearTimeout(successor);
    stopWatching();
    unwatch();
    signal.removeEventListener('abort', stop);
    current.stop();
    next?.stop();
  }
}

/** One screenrecord's output as access units, as they complete. */
export class ScreenrecordRun {
  private readonly nals = new NalSplitter();
  private readonly assembler = new AccessUnitAssembler();
  private readonly ready: AccessUnit[] = [];
  private failure: Error | undefined;
  private timer: NodeJS.Timeout | undefined;
  /** Bytes have come since the last picture was taken as complete. */
  private open = false;
  ended = false;
  /** Stopped for a rotation: no picture is then no failure. */
  rotated = false;
  pictures = 0;

  constructor(
    private readonly stream: Duplex,
    readonly geometry: Geometry,
    private readonly notify: () => void,
    writesIntact: boolean,
  ) {
    stream.on('data', (chunk: Buffer) => {
      // Nothing was pending, and the chunk ends a picture's last write.
      const ends = writesIntact && !this.open && wholePicture(chunk);
      // A whole P picture while nothing is under way (nearly every picture): relayed as it came.
      const unit = ends && this.nals.idle ? this.assembler.whole(chunk) : undefined;
      if (unit) return this.queue(unit);
      this.open = true;
      const units = this.nals.push(chunk);
      for (const unit of units) this.add(unit);
      // Every unit is this chunk's; the one still open is its last.
      if (ends && picturesBegun(units, this.nals.peek()) === 1) return this.flush();
      // One timer for the run, pushed back by each chunk: cheaper than a new one per chunk.
      if (this.timer) this.timer.refresh();
      else this.timer = setTimeout(() => this.flush(), FLUSH_MS);
    });
    const end = () => {
      if (this.ended) return;
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

  get hasPicture(): boolean {
    return this.ready.length > 0;
  }

  take(): AccessUnit | undefined {
    return this.ready.shift();
  }

  /** Closing its adb stream hangs screenrecord up; it stops as at Ctrl+C. */
  stop(): void {
    this.stream.destroy();
  }

  private add(nal: Buffer): void {
    this.queue(this.assembler.push(nal));
  }

  private flush(): void {
    this.open = false;
    const tail = this.nals.flush();
    if (tail) this.add(tail);
    this.queue(this.assembler.flush());
  }

  private queue(unit: AccessUnit | undefined): void {
    if (!unit) return;
    this.pictures++;
    this.ready.push(unit);
    this.notify();
  }
}
