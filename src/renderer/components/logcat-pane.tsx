import { useEffect, useLayoutEffect, useRef, useState, type RefObject } from 'react';
import { followDeviceLogs, levelOf, LOG_LEVELS, logMatches, type LogLevel, type LogLine } from '../../shared/client/device-logs.js';
import { api } from '../app-context.js';
import { ErrorBanner } from '../ui.js';
import { saveBlob, stampedName } from './download.js';

/** Lines kept in the page: a busy phone logs thousands a minute, and older ones are in `adb logcat` anyway. */
const MAX_LINES = 2000;
/** Lines held while paused: past this, the oldest held ones give way and a marker says how many. */
const MAX_HELD = 20_000;
/** Lines drawn at once: the newest of those that pass the filters. */
const MAX_SHOWN = 500;
/** A stream that ends while the phone is held is opened again after this long, then a little longer each time. */
const RECONNECT_MS = [500, 1000, 2000, 5000];
/** A scroll within this long of the reader's wheel, key or pointer is theirs; any other is the page following the log. */
const USER_SCROLL_MS = 800;

/** The log is never shorter than this: on a short window the page scrolls to it rather than show three lines. */
const MIN_LOG_HEIGHT = 200;
/** Room left below the log, so that its last line is clear of the window's edge. */
const LOG_BOTTOM_MARGIN = 16;

/**
 * A height that takes an element from where it starts down to the window's bottom edge: the log's newest line, where
 * it follows, is then in sight, whatever stands above it (the session's header, a release warning, the toolbar).
 * Measured again when the window or the element's surroundings change size, and when its tab is shown.
 */
function useHeightToWindowBottom(ref: RefObject<HTMLElement | null>): number | undefined {
  const [height, setHeight] = useState<number>();
  useLayoutEffect(() => {
    const el = ref.current;
    if (!el) return;
    const fit = () => {
      const rect = el.getBoundingClientRect();
      // A hidden tab has no box: it is measured when shown.
      if (rect.width === 0) return;
      setHeight(Math.max(MIN_LOG_HEIGHT, Math.floor(window.innerHeight - (rect.top + window.scrollY) - LOG_BOTTOM_MARGIN)));
    };
    fit();
    const observer = new ResizeObserver(fit);
    observer.observe(el);
    if (el.parentElement?.parentElement) observer.observe(el.parentElement.parentElement);
    window.addEventListener('resize', fit);
    return () => {
      observer.disconnect();
      window.removeEventListener('resize', fit);
    };
  }, [ref]);
  return height;
}

const LEVEL_NAMES: Record<LogLevel, string> = { V: 'Verbose', D: 'Debug', I: 'Info', W: 'Warning', E: 'Error', F: 'Fatal' };

type Row = (LogLine & { seq: number; gap?: undefined }) | { seq: number; gap: string };

const timeOf = (iso: string) => {
  const d = new Date(iso);
  return Number.isNaN(d.getTime()) ? iso : d.toLocaleTimeString(undefined, { hour12: false }) + `.${String(d.getMilliseconds()).padStart(3, '0')}`;
};
const keyOf = (l: LogLine) => `${l.time}|${l.pid}|${l.tag}|${l.message}`;

/**
 * The phone's live log from GET .../logs, with a minimum level and a text filter. It follows the newest line until
 * the reader scrolls up; Pause holds new lines (and says how many wait) rather than dropping them; a stream that
 * ends while the phone is still held (a restart) is opened again, without repeating the lines already shown.
 */
export function LogcatPane({ sessionId, serial, name, generation = 0 }: { sessionId: string; serial: string; name: string; generation?: number }) {
  const [lines, setLines] = useState<Row[]>([]);
  const [held, setHeld] = useState(0);
  const [minLevel, setMinLevel] = useState<LogLevel>('V');
  const [text, setText] = useState('');
  const [paused, setPaused] = useState(false);
  const [error, setError] = useState<string>();
  const [state, setState] = useState<'live' | 'reconnecting'>('live');
  const [following, setFollowing] = useState(true);
  const list = useRef<HTMLOListElement>(null);
  const seq = useRef(0);
  const pausedRef = useRef(paused);
  pausedRef.current = paused;
  const holding = useRef<{ lines: LogLine[]; dropped: number }>({ lines: [], dropped: 0 });
  /** What was shown last, so that a reconnect's replay of the backlog is not shown twice. */
  const last = useRef<{ time: string; keys: Set<string> }>({ time: '', keys: new Set() });
  const userScrollAt = useRef(0);
  const height = useHeightToWindowBottom(list);

  const append = (batch: LogLine[], gap?: string) => {
    const rows: Row[] = [];
    if (gap) rows.push({ seq: seq.current++, gap });
    for (const l of batch) rows.push({ ...l, seq: seq.current++ });
    setLines((old) => [...old, ...rows].slice(-MAX_LINES));
  };

  useEffect(() => {
    const abort = new AbortController();
    const fresh = (batch: LogLine[]) => batch.filter((l) => {
      const seen = last.current;
      if (l.time < seen.time || (l.time === seen.time && seen.keys.has(keyOf(l)))) return false;
      if (l.time !== seen.time) last.current = { time: l.time, keys: new Set() };
      last.current.keys.add(keyOf(l));
      return true;
    });
    const receive = (batch: LogLine[]) => {
      const news = fresh(batch);
      if (news.length === 0) return;
      if (!pausedRef.current) return append(news);
      const h = holding.current;
      h.lines.push(...news);
      if (h.lines.length > MAX_HELD) h.dropped += h.lines.splice(0, h.lines.length - MAX_HELD).length;
      setHeld(h.lines.length);
    };
    void (async () => {
      for (let attempt = 0; !abort.signal.aborted; attempt++) {
        try {
          await followDeviceLogs(api, sessionId, serial, (batch) => {
            attempt = 0;
            setState('live');
            setError(undefined);
            receive(batch);
          }, abort.signal);
        } catch (e) {
          if (abort.signal.aborted) return;
          // A released phone's page goes away; anything else (a restart, a dropped connection) is worth a retry.
          if ((e as { status?: number }).status === 404) return setError(`The log could not be read: ${(e as Error).message}`);
        }
        if (abort.signal.aborted) return;
        setState('reconnecting');
        await new Promise((r) => setTimeout(r, RECONNECT_MS[Math.min(attempt, RECONNECT_MS.length - 1)]));
      }
    })();
    return () => abort.abort();
  }, [sessionId, serial, generation]);

  const resume = () => {
    const h = holding.current;
    append(h.lines.splice(0), h.dropped ? `${h.dropped} lines were dropped while paused` : undefined);
    h.dropped = 0;
    setHeld(0);
    setPaused(false);
  };

  const shown = lines.filter((l) => l.gap !== undefined || logMatches(l, minLevel, text)).slice(-MAX_SHOWN);

  // Follows the newest line, before the browser paints, unless the reader scrolled up.
  useLayoutEffect(() => {
    const el = list.current;
    if (el && following) el.scrollTop = el.scrollHeight;
  });

  const jumpToLatest = () => {
    setFollowing(true);
    const el = list.current;
    if (el) el.scrollTop = el.scrollHeight;
  };

  const exportShown = () => {
    const body = shown.map((l) => (l.gap !== undefined ? `--------- ${l.gap}` : `${l.time} ${String(l.pid).padStart(5)} ${levelOf(l)} ${l.tag}: ${l.message}`)).join('\n');
    saveBlob(new Blob([body + '\n'], { type: 'text/plain' }), stampedName(`${name}-logcat`, 'txt'));
  };

  const markUserScroll = () => (userScrollAt.current = performance.now());

  return (
    <div className="logs">
      <div className="logs-controls">
        <label>
          Level
          <select value={minLevel} onChange={(e) => setMinLevel(e.target.value as LogLevel)} aria-label="Lowest log level shown">
            {LOG_LEVELS.map((l) => <option key={l} value={l}>{LEVEL_NAMES[l]} and above</option>)}
          </select>
        </label>
        <label>
          Filter
          <input type="search" value={text} aria-label="Filter log lines by tag, text or pid" placeholder="Tag, text or pid" onChange={(e) => setText(e.target.value)} />
        </label>
        <button type="button" aria-pressed={paused} onClick={() => (paused ? resume() : setPaused(true))}>{paused ? `Resume${held ? ` (${held} waiting)` : ''}` : 'Pause'}</button>
        <button type="button" onClick={() => setLines([])}>Clear</button>
        <button type="button" onClick={exportShown} disabled={shown.length === 0}>Export shown</button>
      </div>
      <p className="muted" role="status" aria-live="off">
        {shown.filter((l) => l.gap === undefined).length} of {lines.filter((l) => l.gap === undefined).length} lines
        {paused ? ` · paused, ${held} new ${held === 1 ? 'line' : 'lines'} waiting` : ''}
        {state === 'reconnecting' ? ' · the log stream ended: reconnecting…' : ''}
      </p>
      <ErrorBanner error={error} onDismiss={() => setError(undefined)} />
      <div className="log-wrap">
        <ol
          ref={list}
          className="log-lines"
          aria-label={`Log of ${name}`}
          tabIndex={0}
          style={height ? { height } : undefined}
          onWheel={markUserScroll}
          onPointerDown={markUserScroll}
          onKeyDown={markUserScroll}
          onScroll={(e) => {
            const el = e.currentTarget;
            const atBottom = el.scrollHeight - el.scrollTop - el.clientHeight < 24;
            if (atBottom) setFollowing(true);
            else if (performance.now() - userScrollAt.current < USER_SCROLL_MS) setFollowing(false);
          }}
        >
          {shown.map((l) => {
            if (l.gap !== undefined) return <li key={l.seq} className="log-gap">--------- {l.gap}</li>;
            const level = levelOf(l);
            return (
              <li key={l.seq} data-level={level}>
                <span className="time">{timeOf(l.time)}</span> <span className={`lvl lvl-${level}`} title={LEVEL_NAMES[level]}>{level}</span>
                <span className="tag">{l.tag}</span>({l.pid}): {l.message}
              </li>
            );
          })}
        </ol>
        {!following && <button type="button" className="jump-latest" onClick={jumpToLatest}>Jump to latest</button>}
      </div>
    </div>
  );
}
