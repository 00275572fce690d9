import { encodePng } from '../png.js';
import type { Canvas } from './canvas.js';
import type { Device } from './device.js';
import { encodeJpeg } from './jpeg.js';
import { buildWindow, contains, dumpXml, hitTest, imeWindow, render, renderKey, scrollTarget, type UiNode } from './ui.js';

/** Below this travel a gesture is a touch in place, as ViewConfiguration's touch slop decides. */
const TOUCH_SLOP = 16;
const LONG_PRESS_MS = 500;
/** PNGs kept of pictures shown lately: about 12 KB each at 1080x2400. */
const RECENT_PNGS = 16;

interface Frame {
  key: string;
  now: Date;
  tree: UiNode | undefined;
  canvas?: Canvas;
  png?: Buffer;
  /** JPEGs of this frame by `<width>x<height>q<quality>`: every minicap client of the phone shares them. */
  jpegs?: Map<string, Promise<Buffer>>;
  /** JPEG encodings still reading this frame's canvas (on sharp's threads). */
  encoding?: number;
}

/**
 * The display: builds the window tree, rasterizes and encodes it at most once per visible state (PNG encoding
 * is what makes screencap slow), and turns touch gestures into actions on the tree.
 */
export class Screen {
  private frame?: Frame;
  /**
   * The canvas of a picture no longer shown that nothing reads any more, drawn over for the next one. A 1080x2400
   * canvas is 10 MB: new memory for each picture of a moving screen cost more in page faults than drawing it did
   * (the largest part of a profiled test run's simulated phones). Every reader of canvas() but the JPEG encoder is
   * done with it before it returns; the encoder holds its frame's canvas until it has finished.
   */
  private spare?: Canvas;
  /** The last RECENT_PNGS pictures' PNGs by renderKey, least recently used first. */
  private readonly pngs = new Map<string, Buffer>();

  constructor(
    private readonly device: Device,
    private readonly clock: () => Date = () => new Date(),
  ) {}

  private current(): Frame {
    const now = this.clock();
    // The status bar clock is part of the picture, so a new minute is a new frame.
    let key = `${this.device.rev}@${now.getFullYear()}-${now.getMonth()}-${now.getDate()}T${now.getHours()}:${now.getMinutes()}`;
    // A running stopwatch changes the picture on every refresh of the display, as an animation does.
    if (this.device.animating) key += `#${Math.floor(now.getTime() / (1000 / this.device.options.refreshRate))}`;
    if (this.frame?.key !== key) {
      const shown = this.frame;
      this.frame = { key, now, tree: buildWindow(this.device, now) };
      if (shown && !shown.encoding) this.retire(shown);
    }
    return this.frame;
  }

  tree(): UiNode | undefined {
    return this.current().tree;
  }

  canvas(): Canvas {
    const f = this.current();
    if (!f.canvas) {
      // Taken either way: a spare of another size (the phone turned) is not kept for pictures that never fit it.
      const spare = this.spare;
      this.spare = undefined;
      f.canvas = render(this.device, f.tree, f.now, spare);
    }
    return f.canvas;
  }

  /** A frame no longer shown, and no longer read: its canvas is kept for the next picture. */
  private retire(frame: Frame): void {
    this.spare ??= frame.canvas;
    frame.canvas = undefined;
  }

  png(): Buffer {
    const f = this.current();
    if (!f.png) {
      // RGB without alpha, like screencap's; a picture shown before is not drawn and encoded again.
      const key = renderKey(this.device, f.tree, f.now);
      f.png = this.pngs.get(key) ?? encodePng(this.canvas());
      this.pngs.delete(key);
      this.pngs.set(key, f.png);
      if (this.pngs.size > RECENT_PNGS) this.pngs.delete(this.pngs.keys().next().value!);
    }
    return f.png;
  }

  /** Changes exactly when the picture does: what minicap compares to send only changed frames. */
  key(): string {
    return this.current().key;
  }

  /**
   * Waits while the picture stands still: until something visible changes, the status bar's clock turns a minute,
   * `ms` pass or `signal` aborts. Returns at once while it animates (a new picture every display refresh).
   */
  async stillUntil(key: string, ms: number, signal?: AbortSignal): Promise<void> {
    if (this.device.animating || this.key() !== key) return;
    const nextMinute = 60_000 - (Date.now() % 60_000) + 5;
    await this.device.untilChanged(Math.min(ms, nextMinute), signal);
  }

  /** The screen scaled to width x height and JPEG-encoded, as minicap's virtual display and libjpeg-turbo do. */
  jpeg(width: number, height: number, quality: number): Promise<Buffer> {
    const f = this.current();
    f.jpegs ??= new Map();
    const id = `${width}x${height}q${quality}`;
    let data = f.jpegs.get(id);
    if (!data) {
      f.encoding = (f.encoding ?? 0) + 1;
      data = encodeJpeg(this.canvas(), width, height, quality).finally(() => {
        if (--f.encoding! === 0 && f !== this.frame) this.retire(f);
      });
      f.jpegs.set(id, data);
    }
    return data;
  }

  /** The uiautomator XML, or undefined when there is no window to dump (screen off). */
  dump(): string | undefined {
    const tree = this.tree();
    return tree ? dumpXml(tree, this.device.rotation) : undefined;
  }

  tap(x: number, y: number): void {
    const d = this.device;
    if (!d.awake) return;
    const tree = this.tree();
    d.lastTap = { x, y };
    d.log.append('I', 'InputDispatcher', `Delivering touch to ${d.windowPackage}: action=DOWN/UP x=${x} y=${y}`);
    d.changed();
    if (d.locked || !tree) return;
    if (this.dismissPopupOutside(tree, x, y)) return;
    // The keyboard's window is above the app's: a touch on it is the keyboard's.
    const ime = imeWindow(d);
    if (ime && contains(ime, x, y)) return hitTest(ime, x, y, 'tap')?.onTap?.();
    hitTest(tree, x, y, 'tap')?.onTap?.();
  }

  longPress(x: number, y: number): void {
    const d = this.device;
    if (!d.awake) return;
    const tree = this.tree();
    d.lastTap = { x, y };
    d.lastLongPress = { x, y };
    d.log.append('I', 'InputDispatcher', `Delivering touch to ${d.windowPackage}: action=LONG_PRESS x=${x} y=${y}`);
    d.changed();
    if (d.locked || !tree) return;
    if (this.dismissPopupOutside(tree, x, y)) return;
    // A view that is not long-clickable still clicks when the finger lifts.
    const target = hitTest(tree, x, y, 'long') ?? hitTest(tree, x, y, 'tap');
    if (target?.onLongPress) target.onLongPress();
    else target?.onTap?.();
  }

  swipe(x1: number, y1: number, x2: number, y2: number, durationMs: number): void {
    const d = this.device;
    if (!d.awake) return;
    if (Math.hypot(x2 - x1, y2 - y1) < TOUCH_SLOP) {
      if (durationMs >= LONG_PRESS_MS) this.longPress(x1, y1);
      else this.tap(x1, y1);
      return;
    }
    d.lastSwipe = { x1, y1, x2, y2, durationMs };
    d.log.append('I', 'InputDispatcher', `Delivering touch to ${d.windowPackage}: action=SWIPE from ${x1},${y1} to ${x2},${y2} in ${durationMs}ms`);
    const { height } = d.logicalSize;
    const statusBar = Math.round((24 * d.options.density) / 160);
    if (d.locked && y1 - y2 > height * 0.15) d.unlock();
    // Down from the status bar pulls the shade; up on the shade puts it away.
    else if (!d.locked && !d.shade && y1 < statusBar && y2 - y1 > height * 0.1) d.openShade();
    else if (d.shade && y1 - y2 > height * 0.1) d.closeShade();
    else if (!d.locked) {
      const tree = this.tree();
      if (tree) scrollTarget(tree, x1, y1)?.onScroll?.(x1 - x2, y1 - y2);
    }
    d.changed();
  }

  private dismissPopupOutside(tree: UiNode, x: number, y: number): boolean {
    if (!this.device.popup) return false;
    const popup = findNode(tree, (n) => n.resourceId === 'com.android.launcher3:id/deep_shortcuts_container');
    if (popup && contains(popup, x, y)) return false;
    this.device.popup = undefined;
    this.device.changed();
    return true;
  }
}

function findNode(root: UiNode, match: (n: UiNode) => boolean): UiNode | undefined {
  if (match(root)) return root;
  for (const child of root.children) {
    const hit = findNode(child, match);
    if (hit) return hit;
  }
  return undefined;
}
