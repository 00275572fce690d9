import { useEffect, useRef, useState } from 'react';
import { followDeviceLogs, levelOf, LOG_LEVELS, logMatches, type LogLevel, type LogLine } from '../../shared/client/device-logs.js';
import { api } from '../app-context.js';
import { ErrorBanner } from '../ui.js';

/** Lines kept in the page: a busy phone logs thousands a minute, and older ones are in `adb logcat` anyway. */
const MAX_LINES = 2000;
/** Lines drawn at once: the newest of those that pass the filters. */
const MAX_SHOWN = 500;

const LEVEL_NAMES: Record<LogLevel, string> = { V: 'Verbose', D: 'Debug', I: 'Info', W: 'Warning', E: 'Error', F: 'Fatal' };

const timeOf = (iso: string) => {
  const d = new Date(iso);
  return Number.isNaN(d.getTime()) ? iso : d.toLocaleTimeString(undefined, { hour12: false }) + `.${String(d.getMilliseconds()).padStart(3, '0')}`;
};

/** The phone's live log from GET .../logs, with a minimum level and a text filter, following the newest line. */
export function LogcatPane({ sessionId, serial, name }: { sessionId: string; serial: string; name: string }) {
  const [lines, setLines] = useState<Array<LogLine & { seq: number }>>([]);
  const [minLevel, setMinLevel] = useState<LogLevel>('V');
  const [text, setText] = useState('');
  const [paused, setPaused] = useState(false);
  const [error, setError] = useState<string>();
  const [ended, setEnded] = useState(false);
  const list = useRef<HTMLOListElement>(null);
  const seq = useRef(0);
  const pausedRef = useRef(paused);
  pausedRef.current = paused;

  useEffect(() => {
    const abort = new AbortController();
    setEnded(false);
    void followDeviceLogs(api, sessionId, serial, (batch) => {
      if (pausedRef.current) return;
      setLines((old) => [...old, ...batch.map((l) => ({ ...l, seq: seq.current++ }))].slice(-MAX_LINES));
    }, abort.signal)
      .then(() => { if (!abort.signal.aborted) setEnded(true); })
      .catch((e: Error) => setError(`The log could not be read: ${e.message}`));
    return () => abort.abort();
  }, [sessionId, serial]);

  const shown = lines.filter((l) => logMatches(l, minLevel, text)).slice(-MAX_SHOWN);

  // Follows the newest line, unless the reader scrolled up to read an older one.
  const atBottom = useRef(true);
  useEffect(() => {
    const el = list.current;
    if (el && atBottom.current) el.scrollTop = el.scrollHeight;
  }, [shown.length, lines.length]);

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
        <button type="button" aria-pressed={paused} onClick={() => setPaused(!paused)}>{paused ? 'Resume' : 'Pause'}</button>
        <button type="button" onClick={() => setLines([])}>Clear</button>
      </div>
      <p className="muted" role="status" aria-live="off">
        {shown.length} of {lines.length} lines{paused ? ' · paused' : ''}{ended ? ' · the log stream ended' : ''}
      </p>
      <ErrorBanner error={error} onDismiss={() => setError(undefined)} />
      <ol
        ref={list}
        className="log-lines"
        aria-label={`Log of ${name}`}
        tabIndex={0}
        onScroll={(e) => {
          const el = e.currentTarget;
          atBottom.current = el.scrollHeight - el.scrollTop - el.clientHeight < 24;
        }}
      >
        {shown.map((l) => {
          const level = levelOf(l);
          return (
            <li key={l.seq} data-level={level}>
              <span className="time">{timeOf(l.time)}</span> <span className={`lvl lvl-${level}`} title={LEVEL_NAMES[level]}>{level}</span>
              <span className="tag">{l.tag}</span>({l.pid}): {l.message}
            </li>
          );
        })}
      </ol>
    </div>
  );
}
