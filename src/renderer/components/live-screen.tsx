import { useEffect, useRef, useState, type KeyboardEvent, type PointerEvent } from 'react';
import type { DeviceAction } from '../../shared/api/devices.js';
import { api } from '../app-context.js';
import { ErrorBanner, Spinner } from '../ui.js';

/** How far a pointer may move, in device pixels, and still be a tap rather than a swipe. */
const TAP_SLOP = 12;
/** Keystrokes typed within this long go to the phone as one typeText. */
const TYPE_BATCH_MS = 120;

const CLOSE_REASONS: Record<number, string> = {
  4001: 'The phone was released.',
  4002: 'The phone went offline.',
  1011: 'Screen capture failed.',
  1001: 'Benchtop is shutting down.',
};

/**
 * The phone's screen over the live WebSocket: a hello with its size, then PNG frames. A click taps, a drag swipes,
 * and keys typed while the screen has focus are typed on the phone. The frames shown are counted in data-frames,
 * which the frame-rate benchmark reads.
 */
export function LiveScreen({ sessionId, serial, name }: { sessionId: string; serial: string; name: string }) {
  const img = useRef<HTMLImageElement>(null);
  const size = useRef<{ width: number; height: number }>(undefined);
  const frames = useRef(0);
  const [connected, setConnected] = useState(false);
  const [closed, setClosed] = useState<string>();
  const [error, setError] = useState<string>();
  const down = useRef<{ x: number; y: number; at: number }>(undefined);
  const typed = useRef('');
  const typeTimer = useRef<ReturnType<typeof setTimeout>>(undefined);

  useEffect(() => {
    const { url, protocols } = api.screenSocket(sessionId, serial);
    const socket = new WebSocket(url, protocols);
    socket.binaryType = 'blob';
    let shown: string | undefined;
    let pending: Blob | undefined;
    let decoding = false;
    // Only the newest frame is decoded: a frame that arrives while one is being shown replaces the waiting one.
    const show = () => {
      if (decoding || !pending || !img.current) return;
      const url = URL.createObjectURL(pending);
      pending = undefined;
      decoding = true;
      const el = img.current;
      el.onload = () => {
        decoding = false;
        if (shown) URL.revokeObjectURL(shown);
        shown = url;
        frames.current++;
        el.dataset.frames = String(frames.current);
        show();
      };
      el.onerror = () => {
        decoding = false;
        URL.revokeObjectURL(url);
        show();
      };
      el.src = url;
    };
    socket.onmessage = (event: MessageEvent<Blob | string>) => {
      if (typeof event.data === 'string') {
        const hello = JSON.parse(event.data) as { type: string; width: number; height: number };
        if (hello.type === 'hello') size.current = { width: hello.width, height: hello.height };
        setConnected(true);
        return;
      }
      pending = event.data;
      show();
    };
    socket.onclose = (event) => {
      setConnected(false);
      setClosed(CLOSE_REASONS[event.code] ?? (event.code === 1006 ? 'The live screen could not connect.' : `The live screen closed (${event.code}).`));
    };
    return () => {
      socket.onclose = null;
      socket.close();
      if (shown) URL.revokeObjectURL(shown);
    };
  }, [sessionId, serial]);

  const act = async (action: DeviceAction) => {
    try {
      await api.act(sessionId, serial, action);
      setError(undefined);
    } catch (e) {
      setError((e as Error).message);
    }
  };

  /** The pointer's position in the phone's own pixels. */
  const devicePoint = (event: PointerEvent<HTMLElement>) => {
    const rect = event.currentTarget.getBoundingClientRect();
    const s = size.current ?? { width: rect.width, height: rect.height };
    const clamp = (v: number, max: number) => Math.max(0, Math.min(max - 1, Math.round(v)));
    return {
      x: clamp(((event.clientX - rect.left) / rect.width) * s.width, s.width),
      y: clamp(((event.clientY - rect.top) / rect.height) * s.height, s.height),
    };
  };

  const onPointerDown = (event: PointerEvent<HTMLDivElement>) => {
    event.currentTarget.focus();
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
      void act(durationMs > 600 ? { type: 'longPress', x: from.x, y: from.y, durationMs } : { type: 'tap', x: from.x, y: from.y });
    } else {
      void act({ type: 'swipe', fromX: from.x, fromY: from.y, toX: to.x, toY: to.y, durationMs: Math.max(100, durationMs) });
    }
  };

  const flushTyped = () => {
    const text = typed.current;
    typed.current = '';
    if (text) void act({ type: 'typeText', text });
  };
  const onKeyDown = (event: KeyboardEvent<HTMLDivElement>) => {
    if (event.ctrlKey || event.metaKey || event.altKey) return;
    if (event.key === 'Enter') {
      event.preventDefault();
      flushTyped();
      void act({ type: 'pressButton', button: 'ENTER' });
    } else if (event.key.length === 1) {
      event.preventDefault();
      typed.current += event.key;
      clearTimeout(typeTimer.current);
      typeTimer.current = setTimeout(flushTyped, TYPE_BATCH_MS);
    }
  };

  return (
    <div className="live-screen">
      <div
        className="screen"
        role="application"
        aria-label={`Live screen of ${name}: click to tap, drag to swipe, type to enter text`}
        tabIndex={0}
        onPointerDown={onPointerDown}
        onPointerUp={onPointerUp}
        onKeyDown={onKeyDown}
      >
        <img ref={img} alt={`Screen of ${name}`} draggable={false} data-frames="0" />
        {!connected && !closed && <div className="screen-overlay"><Spinner label="Connecting to the screen" /></div>}
        {closed && <div className="screen-overlay">{closed}</div>}
      </div>
      <div className="button-row" role="group" aria-label="Phone buttons">
        <button type="button" onClick={() => void act({ type: 'pressButton', button: 'BACK' })}>Back</button>
        <button type="button" onClick={() => void act({ type: 'pressButton', button: 'HOME' })}>Home</button>
        <button type="button" onClick={() => void act({ type: 'pressButton', button: 'APP_SWITCH' })}>Recent apps</button>
      </div>
      <ErrorBanner error={error} onDismiss={() => setError(undefined)} />
    </div>
  );
}
