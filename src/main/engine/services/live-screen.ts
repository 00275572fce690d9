import { setTimeout as sleep } from 'node:timers/promises';
import type { LiveVideo, PhoneDriver } from '../fleet/types.js';
import { pngSize } from '../domain/image-size.js';

/**
 * One encoded picture of the screen, with its size so that a viewer need not decode it to learn it. A PNG or JPEG
 * stands alone; an H.264 access unit (`video` set) may depend on the ones before it back to its keyframe.
 */
export interface Frame {
  data: Buffer;
  format: 'png' | 'jpeg' | 'h264';
  width: number;
  height: number;
  /**
   * What captured it: screenrecord (Android's own H.264 encoder), minicap (Android) and WebDriverAgent's MJPEG (iOS)
   * push frames as the screen changes; screencap is the slow portable fallback.
   */
  source: 'screenrecord' | 'minicap' | 'mjpeg' | 'screencap';
  /** The phone's screen in its own pixels, when the frame is scaled down from it (taps use the screen's pixels). */
  screen?: { width: number; height: number };
  video?: LiveVideo;
  /** Why this source was chosen, when another was wanted first (screenrecord gave no video, the viewer decodes no H.264). */
  reason?: string;
}

/** A frame that stands alone: what a screenshot may return instead of a capture. */
export type Picture = Frame & { format: 'png' | 'jpeg' };

/**
 * Where a phone's frames come from. screencap is the portable slow path; a minicap source (JPEG frames that the
 * phone pushes at the display's own rate, from @devicefarmer/minicap-prebuilt) and screenrecord's H.264 implement the
 * same.
 */
export interface FrameSource {
  /** Frames in order until `signal` aborts; throws when the phone fails. */
  frames(signal: AbortSignal): AsyncIterable<Frame>;
}

/** Why a feed ended for its viewers. */
export type FeedEnd = 'device_released' | 'device_offline' | 'capture_failed' | 'shutdown';

/** A connected viewer, as its transport (a WebSocket) implements it. */
export interface Viewer {
  /** The longest side, in pixels, this viewer can use; the feed is captured at the largest any viewer asked for. */
  readonly maxSize?: number;
  /** It decodes H.264 (every viewer takes JPEG and PNG): its feed is then the phone's own encoder, where it has one. */
  readonly video?: boolean;
  /**
   * Sends frames in order, all or none: none while the viewer is still sending earlier ones (a slow link), and then it
   * answers false. Dropping is fine for pictures that stand alone; an H.264 viewer that dropped one is sent the last
   * keyframe and the frames since before anything else.
   */
  send(frames: readonly Frame[]): boolean;
  end(why: FeedEnd): void;
}

/** One allocation's phone: how to capture it, and whether the allocation still holds it. */
export interface ScreenTarget {
  /** The allocation id: every viewer of the same allocation (and the same wish for video) shares one feed. */
  key: string;
  /** `video`: H.264 from the phone's encoder where it has one, else what stands alone. */
  source(options: { maxSize: number; video: boolean }): FrameSource;
  /** Why watching must stop now, or undefined while the allocation is in_use. */
  ended(): FeedEnd | undefined;
}

/** A failed capture is retried this often before the viewers are told: an unplugged phone fails before it is offline. */
const MAX_FAILURES = 5;
const RETRY_MS = 300;
/** A capture can hang on a phone that went away, so the allocation is also checked on a timer, not only per frame. */
const CHECK_MS = 500;
/** The longest side of captured frames when no viewer says: about what a window shows a phone at. */
export const DEFAULT_MAX_SIZE = 1280;

/**
 * Sequential screencaps: one in flight at a time, since a second would only slow the phone's encoding of the first.
 * At most `maxFps` (0: no cap): a phone that answers faster than a screen needs (a simulated one caches its PNG)
 * would otherwise cost a core and tens of MB/s per viewer.
 */
export function screencapSource(driver: PhoneDriver, maxFps: number): FrameSource {
  const minIntervalMs = maxFps > 0 ? 1000 / maxFps : 0;
  return {
    async *frames(signal) {
      while (!signal.aborted) {
        const started = performance.now();
        const data = await driver.screenshot();
        yield { data, format: 'png', ...pngSize(data), source: 'screencap' };
        const wait = minIntervalMs - (performance.now() - started);
        if (wait > 0 && !signal.aborted) await sleep(wait);
      }
    },
  };
}

/**
 * The phone's own feed (minicap) where it has one, else screencap. A feed that never delivers a frame makes this
 * allocation fall back to screencap for good (`onFail`); one that worked and then stopped is retried by the Feed.
 */
export function preferLiveSource(driver: PhoneDriver, maxFps: number, maxSize: number, onFail: (error: Error) => void): FrameSource {
  return {
    async *frames(signal) {
      let delivered = false;
      try {
        for await (const frame of driver.liveFrames!(signal, { maxSize, maxFps })) {
          delivered = true;
          yield frame;
        }
      } catch (error) {
        if (delivered || signal.aborted) throw error;
        onFail(error as Error);
        yield* screencapSource(driver, maxFps).frames(signal);
      }
    },
  };
}

/** What a feed learned about its phone while it runs: a source that never gave a picture is not tried again. */
export interface SourceMemory {
  /** Why the phone's H.264 feed is not used. */
  videoFailed?: string;
  /** minicap gave no frame: screencap from then on. */
  stillFailed?: boolean;
}

/** Marks every frame with why its source was chosen. */
function because(source: FrameSource, reason: string): FrameSource {
  return {
    async *frames(signal) {
      for await (const frame of source.frames(signal)) yield { ...frame, reason };
    },
  };
}

/**
 * The source for a feed: the phone's H.264 (screenrecord) for a viewer that decodes it, else minicap, screencap last.
 * A source that fails before its first picture is remembered in `memory`, so the feed's later attempts skip it.
 */
export function liveSource(driver: PhoneDriver, options: { maxFps: number; maxSize: number; video: boolean }, memory: SourceMemory): FrameSource {
  const { maxFps, maxSize } = options;
  const still = driver.liveFrames && !memory.stillFailed
    ? preferLiveSource(driver, maxFps, maxSize, () => (memory.stillFailed = true))
    : screencapSource(driver, maxFps);
  if (!options.video) return still;
  // An iPhone: WebDriverAgent's MJPEG is its feed, nothing to explain.
  if (!driver.liveVideo) return still;
  if (memory.videoFailed) return because(still, memory.videoFailed);
  const liveVideo = driver.liveVideo.bind(driver);
  return {
    async *frames(signal) {
      let delivered = false;
      try {
        for await (const frame of liveVideo(signal, { maxSize })) {
          delivered = true;
          yield frame;
        }
      } catch (error) {
        if (delivered || signal.aborted) throw error;
        memory.videoFailed = (error as Error).message;
        yield* because(still, memory.videoFailed).frames(signal);
      }
    },
  };
}

/**
 * An H.264 feed's last keyframe and the access units since: what a new or lagging viewer is sent first, so that it
 * shows the screen at once (its decoder runs through them) without the phone's encoder being asked for a keyframe.
 * Bounded: past MAX_GOP_BYTES or MAX_GOP_FRAMES it is dropped, and a viewer that then needs a start asks for a new
 * keyframe (the feed restarts the encoder).
 */
export class KeyframeCache {
  private frames: Frame[] = [];
  private bytes = 0;

  /** Adds an access unit; a keyframe starts over. Answers false when the cache no longer leads to this frame. */
  add(frame: Frame): boolean {
    if (frame.video?.keyframe) {
      this.frames = [frame];
      this.bytes = frame.data.length;
      return true;
    }
    if (this.frames.length === 0) return false;
    this.frames.push(frame);
    this.bytes += frame.data.length;
    if (this.bytes > MAX_GOP_BYTES || this.frames.length > MAX_GOP_FRAMES) this.clear();
    return this.frames.length > 0;
  }

  /** The keyframe and the frames since, or empty when there is none to start from. */
  get start(): readonly Frame[] {
    return this.frames;
  }

  clear(): void {
    this.frames = [];
    this.bytes = 0;
  }
}

/** Above either, a new viewer's start costs more than a fresh keyframe: about 10 s of a moving screen at 2 Mbps. */
export const MAX_GOP_BYTES = 2 * 1024 * 1024;
export const MAX_GOP_FRAMES = 300;

/** One capture loop and the viewers it fans out to. */
class Feed {
  private readonly viewers = new Set<Viewer>();
  private latest: Frame | undefined;
  private readonly gop = new KeyframeCache();
  /** H.264 viewers that have the current keyframe and every access unit since: the rest wait for a start. */
  private readonly synced = new WeakSet<Viewer>();
  /** A keyframe is asked of the encoder (it restarts): not a failure, and asked once until it comes. */
  private wantKeyframe = false;
  private readonly stopping = new AbortController();
  /** The capture under way, and the size it was started for: a viewer that needs more restarts it. */
  private attempt: { controller: AbortController; maxSize: number } | undefined;
  private readonly timer: NodeJS.Timeout;

  constructor(
    private readonly target: ScreenTarget,
    private readonly video: boolean,
    private readonly onStop: () => void,
  ) {
    this.timer = setInterval(() => {
      if (this.stillLive()) this.resync();
    }, CHECK_MS);
    // Once the first viewer has joined: started before, it would capture at no viewer's size and restart at once.
    queueMicrotask(() => void this.run());
  }

  /** The newest picture that stands alone, while the feed runs (an H.264 access unit is no screenshot). */
  get newest(): Picture | undefined {
    const latest = this.latest;
    return this.stopping.signal.aborted || !latest || latest.format === 'h264' ? undefined : { ...latest, format: latest.format };
  }

  join(viewer: Viewer): void {
    this.viewers.add(viewer);
    if (this.attempt && this.wantedSize() > this.attempt.maxSize) this.attempt.controller.abort();
    // A newcomer sees the screen at once rather than after the next capture.
    if (this.latest?.video) this.start(viewer);
    else if (this.latest) viewer.send([this.latest]);
  }

  leave(viewer: Viewer): void {
    if (this.viewers.delete(viewer) && this.viewers.size === 0) this.stop();
  }

  end(why: FeedEnd): void {
    const viewers = [...this.viewers];
    this.viewers.clear();
    this.stop();
    for (const viewer of viewers) viewer.end(why);
  }

  private stop(): void {
    if (this.stopping.signal.aborted) return;
    this.stopping.abort();
    clearInterval(this.timer);
    this.onStop();
  }

  /** Ends the feed when the allocation no longer holds the phone; checked before every frame goes out. */
  private stillLive(): boolean {
    let why: FeedEnd | undefined;
    try {
      why = this.target.ended();
    } catch {
      // The store is gone: the engine is stopping.
      why = 'shutdown';
    }
    if (why) this.end(why);
    return why === undefined;
  }

  private wantedSize(): number {
    const asked = [...this.viewers].map((v) => v.maxSize ?? DEFAULT_MAX_SIZE);
    return Math.max(...asked, 1);
  }

  /** Sends an H.264 viewer the keyframe and what followed it; without one, asks the encoder for a new keyframe. */
  private start(viewer: Viewer): void {
    const start = this.gop.start;
    if (start.length === 0) return this.askKeyframe();
    if (viewer.send(start)) this.synced.add(viewer);
  }

  /** Viewers that fell behind on a screen that then stood still get their start without waiting for a change. */
  private resync(): void {
    if (!this.latest?.video) return;
    for (const viewer of this.viewers) if (!this.synced.has(viewer)) this.start(viewer);
  }

  private askKeyframe(): void {
    if (this.wantKeyframe || !this.attempt) return;
    this.wantKeyframe = true;
    this.attempt.controller.abort();
  }

  private deliver(frame: Frame): void {
    // WebDriverAgent's MJPEG repeats a still screen at its frame rate (10 a second): a picture the viewers already
    // have is not sent again, which would cost every viewer's link and decoder a JPEG for nothing. (minicap and
    // screenrecord send only changes; screencap's repeats are what its frame cap paces.)
    const repeat = frame.source === 'mjpeg' && this.latest?.source === 'mjpeg' && frame.data.equals(this.latest.data);
    this.latest = frame;
    if (repeat) return;
    if (!frame.video) {
      this.gop.clear();
      for (const viewer of this.viewers) viewer.send([frame]);
      return;
    }
    if (frame.video.keyframe) this.wantKeyframe = false;
    const leads = this.gop.add(frame);
    for (const viewer of this.viewers) {
      if (this.synced.has(viewer)) {
        // A viewer that misses one access unit cannot decode the next: it waits for a start.
        if (!viewer.send([frame])) this.synced.delete(viewer);
      } else if (leads) {
        this.start(viewer);
      } else {
        this.askKeyframe();
      }
    }
  }

  private async run(): Promise<void> {
    const { signal } = this.stopping;
    let failures = 0;
    while (!signal.aborted) {
      const attempt = { controller: new AbortController(), maxSize: this.wantedSize() };
      this.attempt = attempt;
      const stop = () => attempt.controller.abort();
      signal.addEventListener('abort', stop, { once: true });
      try {
        for await (const frame of this.target.source({ maxSize: attempt.maxSize, video: this.video }).frames(attempt.controller.signal)) {
          // A frame captured after the release is never shown: the next user's screen is not ours to see.
          if (signal.aborted || !this.stillLive()) return;
          failures = 0;
          this.deliver(frame);
        }
      } catch {
        if (signal.aborted || !this.stillLive()) return;
        // Restarted for a larger viewer, or for a keyframe: not a failure.
        if (attempt.controller.signal.aborted) continue;
        if (++failures >= MAX_FAILURES) return this.end('capture_failed');
        await sleep(RETRY_MS, undefined, { signal }).catch(() => undefined);
      } finally {
        signal.removeEventListener('abort', stop);
      }
    }
  }
}

/**
 * Live screens: a capture loop per watched allocation, running only while it has viewers, whatever their number.
 * No HTTP here; the API adapts a WebSocket to a Viewer.
 */
export class LiveScreens {
  private readonly feeds = new Map<string, Feed>();

  /** Adds a viewer to the allocation's feed, starting its capture loop for the first one. Returns how to leave. */
  watch(target: ScreenTarget, viewer: Viewer): () => void {
    // A viewer that decodes H.264 and one that does not watch two feeds of the same phone.
    const video = viewer.video === true;
    const key = video ? `${target.key}:h264` : target.key;
    let feed = this.feeds.get(key);
    if (!feed) {
      const created: Feed = new Feed(target, video, () => {
        if (this.feeds.get(key) === created) this.feeds.delete(key);
      });
      this.feeds.set(key, created);
      feed = created;
    }
    feed.join(viewer);
    const joined = feed;
    return () => joined.leave(viewer);
  }

  /** The newest frame of the allocation's feed, while one runs: what a screenshot returns instead of a capture. */
  latest(key: string): Picture | undefined {
    return this.feeds.get(key)?.newest ?? this.feeds.get(`${key}:h264`)?.newest;
  }

  /** Ends every feed: the server is closing. */
  close(): void {
    for (const feed of [...this.feeds.values()]) feed.end('shutdown');
  }
}
