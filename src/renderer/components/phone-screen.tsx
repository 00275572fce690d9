import { useEffect, useLayoutEffect, useRef, useState, type ClipboardEvent, type DragEvent, type KeyboardEvent, type PointerEvent } from 'react';
import type { Button, DeviceAction } from '../../shared/api/devices.js';
import type { ScreenHello } from '../../shared/api/live-screen.js';
import { api } from '../app-context.js';
import { canDecodeH264, H264Player } from '../h264-player.js';
import { Spinner } from '../ui.js';

/** How far a pointer may move, in device pixels, and still be a tap rather than a swipe. */
const TAP_SLOP = 12;
/** Keystrokes typed within this long go to the phone as one typeText. */
const TYPE_BATCH_MS = 120;
/** Wheel movement is gathered for this long, then sent as one swipe: a wheel sends dozens of events per flick. */
const WHEEL_BATCH_MS = 120;
/** Room kept under the screen, so that it ends above the window's bottom edge. */
const BOTTOM_GAP = 16;
/** The screen's frame (padding) around the image, in CSS pixels, both sides together. */
const FRAME = 16;

/** The editing and navigation keys a person presses on the page, as the phone's buttons. */
export const KEY_BUTTONS: Record<string, Button> = {
  Enter: 'ENTER',
  Backspace: 'BACKSPACE',
  Delete: 'DELETE',
  Tab: 'TAB',
  Escape: 'ESCAPE',
  ArrowUp: 'DPAD_UP',
  ArrowDown: 'DPAD_DOWN',
  ArrowLeft: 'DPAD_LEFT',
  ArrowRight: 'DPAD_RIGHT',
};

/** Ctrl/⌘ with these keys, as the phone's own shortcuts. */
const SHORTCUTS: Record<string, Button> = { a: 'SELECT_ALL', c: 'COPY', x: 'CUT' };

/**
 * What an iPhone takes of those: WebDriverAgent types Return and Delete (XCUIKeyboardKey) into the focused field, and
 * has no arrow, Tab, Escape or clipboard keys, so those stay the browser's (Tab moves focus on).
 */
const IOS_KEY_BUTTONS: Record<string, Button> = { Enter: 'ENTER', Backspace: 'BACKSPACE' };
const KEYS = { android: { buttons: KEY_BUTTONS, shortcuts: SHORTCUTS }, ios: { buttons: IOS_KEY_BUTTONS, shortcuts: {} as Record<string, Button> } };

/** While the phone is offline (4002), the live screen asks again this often: it resumes once the phone is back. */
const RESUME_MS = 2000;

const CLOSE_REASONS: Record<number, string> = {
  4001: 'The phone was released.',
  4002: 'The phone went offline.',
  1011: 'Screen capture failed.',
  1001: 'Benchtop is shutting down.',
};

export interface ScreenFeed {
  /**
   * What captures the frames: screenrecord (H.264 from the phone's own encoder), minicap (JPEG, at the display's rate)
   * or screencap (PNG, seconds per frame on a real phone).
   */
  source: string | undefined;
  format: string | undefined;
  fps: number;
  /** Why this source rather than H.264 (the page cannot decode it, the phone's screenrecord gave no video, JPEG chosen). */
  reason?: string;
}

/** What the person chose on the phone page; automatic takes H.264 wherever the page decodes it and the phone sends it. */
export type ScreenCodec = 'auto' | 'h264' | 'jpeg';

export interface PhoneScreenProps {
  sessionId: string;
  serial: string;
  name: string;
  /** Which keys the phone takes, and which app file it installs. */
  platform: 'android' | 'ios';
  /** The phone's own display size, when known (device info); else the feed's hello. */
  displaySize?: { width: number; height: number };
  zoom: 'fit' | 'actual';
  codec: ScreenCodec;
  /** Sends an action in order after the ones before it; rejects with the API's message. */
  act(action: DeviceAction): Promise<unknown>;
  onFeed(feed: ScreenFeed): void;
  /** A WebDriver run drives the phone: the screen is shown, and takes no pointer, key or dropped file. */
  watchOnly?: boolean;
  onFiles(files: File[]): void;
}

/**
 * The phone's screen over the live WebSocket: a hello ({width, height, format, source}), then JPEG or PNG frames. A
 * click taps, a drag swipes, the wheel scrolls, keys go to the phone, a paste types the clipboard, and an app file
 * dropped on it is installed. The frames shown are counted in data-frames, which the benchmarks read.
 */
export function PhoneScreen({ sessionId, serial, name, platform, displaySize, zoom, codec, act, onFeed, onFiles, watchOnly = false }: PhoneScreenProps) {
  const img = useRef<HTMLImageElement>(null);
  const canvas = useRef<HTMLCanvasElement>(null);
  /** The feed is H.264, drawn to the canvas; else pictures in the image. */
  const [video, setVideo] = useState(false);
  const isVideo = useRef(false);
  isVideo.current = video;
  const keys = useRef<HTMLTextAreaElement>(null);
  const stage = useRef<HTMLDivElement>(null);
  const hello = useRef<{ width: number; height: number }>(undefined);
  const [natural, setNatural] = useState<{ width: number; height: number }>();
  const [connected, setConnected] = useState(false);
  const [closed, setClosed] = useState<string>();
  /** When the phone went offline: the picture shown is its last frame, no longer the screen, until it is back. */
  const [staleSince, setStaleSince] = useState<Date>();
  const [dropping, setDropping] = useState(false);
  const [room, setRoom] = useState({ width: 360, height: 640 });
  const down = useRef<{ x: number; y: number; at: number }>(undefined);
  const typed = useRef('');
  const typeTimer = useRef<ReturnType<typeof setTimeout>>(undefined);
  const feed = useRef(onFeed);
  feed.current = onFeed;

  useEffect(() => {
    // Fit never shows the screen taller than the window; 1:1 shows it whole. Frames no larger than that cost the
    // phone less to encode and the page less to decode.
    const maxSize = zoom === 'fit' ? Math.min(4096, Math.max(64, Math.ceil(window.innerHeight * window.devicePixelRatio))) : 4096;
    let socket: WebSocket | undefined;
    let cancelled = false;
    let resume: ReturnType<typeof setTimeout> | undefined;
    let stale = false;
    let shown: string | undefined;
    let pending: Blob | undefined;
    let decoding = false;
    let frames = 0;
    let source: string | undefined;
    let format: string | undefined;
    let reason: string | undefined;
    let pageReason: string | undefined;
    /** What the socket asks for: h264,jpeg where this page decodes H.264, else JPEG alone. */
    let codecs: string | undefined;
    const recent: number[] = [];
    const counted = (el: HTMLElement, width: number, height: number) => {
      frames++;
      el.dataset.frames = String(frames);
      el.dataset.frameAt = String(performance.now());
      setNatural((n) => (n && n.width === width && n.height === height ? n : { width, height }));
      const now = performance.now();
      recent.push(now);
      while (recent.length > 0 && recent[0]! < now - 2000) recent.shift();
    };
    // A decoder that refuses the phone's own stream: the screen comes again as JPEG, and the status line says why.
    const player = new H264Player(canvas.current!, (width, height) => counted(canvas.current!, width, height), (why) => {
      if (cancelled) return;
      pageReason = why;
      codecs = undefined;
      if (socket) {
        socket.onclose = null;
        socket.close();
      }
      open();
    });
    // Only the newest frame is decoded: a frame that arrives while one is being shown replaces the waiting one.
    const show = () => {
      if (decoding || !pending || !img.current) return;
      const objectUrl = URL.createObjectURL(pending);
      pending = undefined;
      decoding = true;
      const el = img.current;
      el.onload = () => {
        decoding = false;
        if (shown) URL.revokeObjectURL(shown);
        shown = objectUrl;
        counted(el, el.naturalWidth, el.naturalHeight);
        show();
      };
      el.onerror = () => {
        decoding = false;
        URL.revokeObjectURL(objectUrl);
        show();
      };
      el.src = objectUrl;
    };
    // The frame rate shown next to the source: frames decoded over the last two seconds.
    const rate = setInterval(() => {
      const now = performance.now();
      while (recent.length > 0 && recent[0]! < now - 2000) recent.shift();
      feed.current({ source, format, fps: recent.length / 2, reason: reason ?? pageReason });
    }, 1000);
    // The socket says what this page decodes (see src/shared/api/live-screen.ts): H.264 where WebCodecs can, unless
    // the person chose JPEG.
    const start = async () => {
      const h264 = codec !== 'jpeg' && (await canDecodeH264());
      pageReason = codec === 'jpeg' ? 'JPEG chosen' : h264 ? undefined : 'this browser cannot decode H.264';
      if (cancelled) return;
      codecs = h264 ? 'h264,jpeg' : undefined;
      open();
    };
    const open = () => {
      const { url, protocols } = api.screenSocket(sessionId, serial, maxSize, codecs);
      const opened = new WebSocket(url, protocols);
      socket = opened;
      connect(opened);
    };
    const connect = (ws: WebSocket) => {
      ws.binaryType = 'arraybuffer';
      ws.onmessage = (event: MessageEvent<ArrayBuffer | string>) => {
        if (typeof event.data === 'string') {
          // A hello comes first, and again before a frame whose size, format or source differs (a rotation, a fallback).
          const message = JSON.parse(event.data) as Partial<ScreenHello> & { type: string; width: number; height: number };
          if (message.type === 'hello') {
            hello.current = { width: message.width, height: message.height };
            format = message.format;
            source = message.source ?? (message.format === 'png' ? 'screencap' : undefined);
            reason = message.reason;
            if (message.format === 'h264' && message.codec) player.configure(message.codec, message.frameWidth ?? 0, message.frameHeight ?? 0);
            setVideo(message.format === 'h264');
            feed.current({ source, format, fps: 0, reason: reason ?? pageReason });
          }
          stale = false;
          setStaleSince(undefined);
          setConnected(true);
          return;
        }
        if (format === 'h264') player.push(event.data);
        else {
          pending = new Blob([event.data]);
          show();
        }
      };
      ws.onclose = (event) => {
        setConnected(false);
        // Offline (a provider's link dropped, a cable): the last frame stays, marked stale, and the screen is asked
        // for again until the phone is back; a refusal meanwhile (still offline) keeps it stale.
        if (event.code === 4002 || (stale && event.code === 1006)) {
          if (!stale) setStaleSince(new Date());
          stale = true;
          resume = setTimeout(open, RESUME_MS);
          return;
        }
        stale = false;
        setStaleSince(undefined);
        setClosed(CLOSE_REASONS[event.code] ?? (event.code === 1006 ? 'The live screen could not connect.' : `The live screen closed (${event.code}).`));
      };
    };
    void start();
    return () => {
      cancelled = true;
      clearInterval(rate);
      clearTimeout(resume);
      if (socket) {
        socket.onclose = null;
        socket.close();
      }
      player.close();
      if (shown) URL.revokeObjectURL(shown);
    };
  }, [sessionId, serial, zoom, codec]);

  // The room the screen may take: the rest of the window below where it starts, and the width its column allows.
  useLayoutEffect(() => {
    const measure = () => {
      const el = stage.current;
      if (!el) return;
      const top = el.getBoundingClientRect().top + window.scrollY;
      const height = Math.max(320, window.innerHeight - top - BOTTOM_GAP);
      // Side by side with the panel (see .phone in styles.css), the screen's column leaves the panel its 300 px and the gap.
      const beside = window.matchMedia('(min-width: 861px)').matches ? 320 : 0;
      const width = Math.max(200, (el.parentElement?.clientWidth ?? window.innerWidth) - beside);
      setRoom((r) => (r.width === width && r.height === height ? r : { width, height }));
    };
    measure();
    const observer = new ResizeObserver(measure);
    if (stage.current?.parentElement) observer.observe(stage.current.parentElement);
    window.addEventListener('resize', measure);
    return () => {
      observer.disconnect();
      window.removeEventListener('resize', measure);
    };
  }, []);

  /** The phone's display in its current orientation: a rotated phone's frames turn, and so do its coordinates. */
  const display = () => {
    const base = displaySize ?? hello.current ?? natural ?? { width: 1080, height: 1920 };
    const frame = natural ?? base;
    const landscape = frame.width > frame.height;
    return landscape === base.width > base.height ? base : { width: base.height, height: base.width };
  };
  const { width: dw, height: dh } = display();
  const aspect = (natural ? natural.width / natural.height : dw / dh) || 9 / 16;
  // Fit: as large as the room allows, whole. 1:1: one phone pixel per screen pixel, scrolled inside the room.
  const fitHeight = Math.floor(Math.min(room.height - FRAME, (room.width - FRAME) / aspect));
  const size = zoom === 'fit'
    ? { width: Math.round(fitHeight * aspect), height: fitHeight }
    : { width: Math.round(dw / window.devicePixelRatio), height: Math.round(dh / window.devicePixelRatio) };

  /** What shows the screen now: the canvas for H.264, else the image. */
  const surface = (): HTMLElement => (isVideo.current ? canvas.current! : img.current!);

  /** The pointer's position in the phone's own pixels, from where it is on the screen's picture. */
  const devicePoint = (event: { clientX: number; clientY: number }) => {
    const rect = surface().getBoundingClientRect();
    const clamp = (v: number, max: number) => Math.max(0, Math.min(max - 1, Math.round(v)));
    return {
      x: clamp(((event.clientX - rect.left) / rect.width) * dw, dw),
      y: clamp(((event.clientY - rect.top) / rect.height) * dh, dh),
    };
  };

  const send = (action: DeviceAction) => void act(action).catch(() => undefined);

  const onPointerDown = (event: PointerEvent<HTMLDivElement>) => {
    if (event.button !== 0) return;
    // The text field takes the focus (not the image): keys and an input method's text go through it.
    event.preventDefault();
    keys.current?.focus();
    event.currentTarget.setPointerCapture(event.pointerId);
    down.current = { ...devicePoint(event), at: performance.now() };
  };
  const onPointerUp = (event: PointerEvent<HTMLDivElement>) => {
    const from = down.current;
    down.current = undefined;
    if (!from) return;
    const to = devicePoint(event);
    const durationMs = Math.max(1, Math.min(60000, Math.round(performance.now() - from.at)));
    if (Math.hypot(to.x - from.x, to.y - from.y) < TAP_SLOP) {
      send(durationMs > 600 ? { type: 'longPress', x: from.x, y: from.y, durationMs } : { type: 'tap', x: from.x, y: from.y });
    } else {
      send({ type: 'swipe', fromX: from.x, fromY: from.y, toX: to.x, toY: to.y, durationMs: Math.max(100, durationMs) });
    }
  };

  // The wheel scrolls what is under the pointer: one swipe per burst, as far as the wheel went (in phone pixels).
  // A native listener, because React's wheel listener is passive and could not keep the page from scrolling.
  const wheel = useRef({ delta: 0, at: { x: 0, y: 0 }, timer: undefined as ReturnType<typeof setTimeout> | undefined });
  const geometry = useRef({ dw, dh });
  geometry.current = { dw, dh };
  useEffect(() => {
    const el = img.current?.parentElement;
    if (!el) return;
    const onWheel = (event: WheelEvent) => {
      event.preventDefault();
      const w = wheel.current;
      const rect = surface().getBoundingClientRect();
      const perCss = geometry.current.dh / rect.height;
      const lines = event.deltaMode === 1 ? 16 : event.deltaMode === 2 ? rect.height : 1;
      w.delta += event.deltaY * lines * perCss;
      w.at = devicePoint(event);
      clearTimeout(w.timer);
      w.timer = setTimeout(() => {
        const { dh: h } = geometry.current;
        const distance = Math.sign(w.delta) * Math.min(Math.abs(w.delta), h * 0.7);
        w.delta = 0;
        if (Math.abs(distance) < TAP_SLOP) return;
        // Scrolling down moves the content up: the finger goes up the screen.
        const fromY = Math.max(0, Math.min(h - 1, Math.round(w.at.y + distance / 2)));
        const toY = Math.max(0, Math.min(h - 1, Math.round(w.at.y - distance / 2)));
        send({ type: 'swipe', fromX: w.at.x, fromY, toX: w.at.x, toY, durationMs: 200 });
      }, WHEEL_BATCH_MS);
    };
    el.addEventListener('wheel', onWheel, { passive: false });
    return () => el.removeEventListener('wheel', onWheel);
  });

  const flushTyped = () => {
    clearTimeout(typeTimer.current);
    const text = typed.current;
    typed.current = '';
    if (text) send({ type: 'typeText', text });
  };
  const type = (text: string) => {
    typed.current += text;
    clearTimeout(typeTimer.current);
    typeTimer.current = setTimeout(flushTyped, TYPE_BATCH_MS);
  };
  const onKeyDown = (event: KeyboardEvent<HTMLDivElement>) => {
    const command = event.ctrlKey || event.metaKey;
    // Ctrl/⌘+A, C and X act in the phone's text field. Ctrl/⌘+V is left to the browser, which then fires a paste
    // event with this computer's clipboard (onPaste). Other shortcuts stay the browser's (reload, find, close the
    // tab), and Shift+Tab leaves the screen.
    const keys = KEYS[platform];
    const shortcut = command && !event.altKey && !event.shiftKey ? keys.shortcuts[event.key.toLowerCase()] : undefined;
    if (shortcut) {
      event.preventDefault();
      flushTyped();
      send({ type: 'pressButton', button: shortcut });
      return;
    }
    if (command || event.altKey || (event.key === 'Tab' && event.shiftKey)) return;
    const button = keys.buttons[event.key];
    if (button) {
      event.preventDefault();
      flushTyped();
      send({ type: 'pressButton', button });
    } else if (event.nativeEvent.isComposing || event.key === 'Process' || event.key === 'Dead') {
      // An input method is composing: its text comes with compositionend or beforeinput.
    } else if (event.key.length === 1 || event.key === 'Spacebar') {
      event.preventDefault();
      type(event.key === 'Spacebar' ? ' ' : event.key);
    }
  };
  // Text that comes without a keydown of its own (an input method's commit outside a composition, the emoji picker,
  // a dead key's result) arrives as beforeinput; a native listener, since React's onBeforeInput is not this event.
  const typeRef = useRef(type);
  typeRef.current = type;
  useEffect(() => {
    const el = keys.current;
    if (!el) return;
    const onBeforeInput = (event: InputEvent) => {
      if (event.inputType === 'insertText' && event.data && !event.isComposing) {
        event.preventDefault();
        typeRef.current(event.data);
      } else if (event.inputType !== 'insertCompositionText') {
        // Nothing else may change the field: what the phone types is on the phone.
        event.preventDefault();
      }
    };
    el.addEventListener('beforeinput', onBeforeInput);
    return () => el.removeEventListener('beforeinput', onBeforeInput);
  }, []);

  const onPaste = (event: ClipboardEvent<HTMLDivElement>) => {
    const text = event.clipboardData.getData('text/plain');
    event.preventDefault();
    if (text) type(text);
  };

  const onDragOver = (event: DragEvent) => {
    if (watchOnly || !event.dataTransfer.types.includes('Files')) return;
    event.preventDefault();
    event.dataTransfer.dropEffect = 'copy';
    setDropping(true);
  };
  const onDrop = (event: DragEvent) => {
    event.preventDefault();
    setDropping(false);
    if (watchOnly) return;
    const files = Array.from(event.dataTransfer.files);
    if (files.length > 0) onFiles(files);
  };

  return (
    <div
      ref={stage}
      className={`phone-stage ${zoom === 'fit' ? 'fit' : 'actual'}`}
      style={zoom === 'actual' ? { height: room.height, width: '100%' } : undefined}
      onDragOver={onDragOver}
      onDragLeave={() => setDropping(false)}
      onDrop={onDrop}
    >
      <div
        className={`screen${dropping ? ' dropping' : ''}`}
        // Watch-only: no pointer, wheel, key or focus reaches the screen (it stays visible, and named).
        inert={watchOnly}
        onPointerDown={onPointerDown}
        onPointerUp={onPointerUp}
        onKeyDown={onKeyDown}
        onPaste={onPaste}
      >
        {/* What has the keyboard focus is a text field, so that an input method (composition, dead keys, the emoji
            picker) delivers its text here too; it covers the screen, but clicks go through it to the image. It keeps
            a text field's own role (a screen reader passes keys on to a text field as it is; ARIA allows a textarea
            no other role). */}
        <textarea
          ref={keys}
          className="screen-keys"
          aria-label={`Live screen of ${name}`}
          aria-describedby={`keys-help-${serial}`}
          autoCapitalize="off"
          autoComplete="off"
          autoCorrect="off"
          spellCheck={false}
          onCompositionEnd={(event) => {
            if (event.data) type(event.data);
            event.currentTarget.value = '';
          }}
        />
        <img ref={img} alt={`Screen of ${name}`} draggable={false} data-frames="0" data-stale={staleSince ? 'true' : undefined} hidden={video} style={{ width: size.width, height: size.height }} />
        <canvas ref={canvas} role="img" aria-label={`Screen of ${name}`} data-frames="0" data-stale={staleSince ? 'true' : undefined} hidden={!video} style={{ width: size.width, height: size.height }} />
        {!connected && !closed && !staleSince && <div className="screen-overlay"><Spinner label="Connecting to the screen" /></div>}
        {staleSince && (
          <div className="screen-stale" role="status">
            Stale: {name} went offline at {staleSince.toLocaleTimeString()}; this is its last frame. The screen comes back when the phone does.
          </div>
        )}
        {closed && <div className="screen-overlay">{closed}</div>}
        {dropping && <div className="drop-hint">Drop an {platform === 'ios' ? '.ipa' : '.apk'} to install it on {name}</div>}
      </div>
    </div>
  );
}
