import { setTimeout as sleep } from 'node:timers/promises';
import type { PhoneDriver } from '../fleet/types.js';
import { pngSize } from '../domain/image-size.js';

/** One encoded picture of the screen, with its size so that a viewer need not decode it to learn it. */
export interface Frame {
  data: Buffer;
  format: 'png' | 'jpeg';
  width: number;
  height: number;
  /**
   * What captured it: minicap (Android) and WebDriverAgent's MJPEG (iOS) push JPEGs as the screen changes; screencap
   * is the slow portable fallback.
   */
  source: 'minicap' | 'mjpeg' | 'screencap';
  /** The phone's screen in its own pixels, when the frame is scaled down from it (taps use the screen's pixels). */
  screen?: { width: number; height: number };
}

/**
 * Where a phone's frames come from. screencap is the portable slow path; a minicap source (JPEG frames that the
 * phone pushes at the display's own rate, from @devicefarmer/minicap-prebuilt) is meant to implement the same.
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
  /** The newest frame. A viewer still sending earlier frames drops it: the next one supersedes it anyway. */
  frame(frame: Frame): void;
  end(why: FeedEnd): void;
}

/** One allocation's phone: how to capture it, and whether the allocation still holds it. */
export interface ScreenTarget {
  /** The allocation id: every viewer of the same allocation shares one feed. */
  key: string;
  source(options: { maxSize: number }): FrameSource;
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

/** One capture loop and the viewers it fans out to. */
class Feed {
  private readonly viewers = new Set<Viewer>();
  private latest: Frame | undefined;
  private readonly stopping = new AbortController();
  /** The capture under way, and the size it was started for: a viewer that needs more restarts it. */
  private attempt: { controller: AbortController; maxSize: number } | undefined;
  private readonly timer: NodeJS.Timeout;

  constructor(
    private readonly target: ScreenTarget,
    private readonly onStop: () => void,
  ) {
    this.timer = setInterval(() => this.stillLive(), CHECK_MS);
    void this.run();
  }

  /** The newest frame, while the feed runs. */
  get newest(): Frame | undefined {
    return this.stopping.signal.aborted ? undefined : this.latest;
  }

  join(viewer: Viewer): void {
    this.viewers.add(viewer);
    if (this.attempt && this.wantedSize() > this.attempt.maxSize) this.attempt.controller.abort();
    // A newcomer sees the screen at once rather than after the next capture.
    if (this.latest) viewer.frame(this.latest);
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

  private async run(): Promise<void> {
    const { signal } = this.stopping;
    let failures = 0;
    while (!signal.aborted) {
      const attempt = { controller: new AbortController(), maxSize: this.wantedSize() };
      this.attempt = attempt;
      const stop = () => attempt.controller.abort();
      signal.addEventListener('abort', stop, { once: true });
      try {
        for await (const frame of this.target.source({ maxSize: attempt.maxSize }).frames(attempt.controller.signal)) {
          // A frame captured after the release is never shown: the next user's screen is not ours to see.
          if (signal.aborted || !this.stillLive()) return;
          failures = 0;
          this.latest = frame;
          for (const viewer of this.viewers) viewer.frame(frame);
        }
      } catch {
        if (signal.aborted || !this.stillLive()) return;
        // Restarted for a larger viewer: not a failure.
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
    let feed = this.feeds.get(target.key);
    if (!feed) {
      const created: Feed = new Feed(target, () => {
        if (this.feeds.get(target.key) === created) this.feeds.delete(target.key);
      });
      this.feeds.set(target.key, created);
      feed = created;
    }
    feed.join(viewer);
    const joined = feed;
    return () => joined.leave(viewer);
  }

  /** The newest frame of the allocation's feed, while one runs: what a screenshot returns instead of a capture. */
  latest(key: string): Frame | undefined {
    return this.feeds.get(key)?.newest;
  }

  /** Ends every feed: the server is closing. */
  close(): void {
    for (const feed of [...this.feeds.values()]) feed.end('shutdown');
  }
}
