/** Small building blocks every screen uses: errors, progress, statuses, and loading a resource from the API. */
import { useCallback, useEffect, useRef, useState, type ReactNode } from 'react';

export function ErrorBanner({ error, onDismiss }: { error: string | undefined; onDismiss?: () => void }) {
  if (!error) return null;
  return (
    <div className="error" role="alert">
      <span>{error}</span>
      {onDismiss && <button type="button" className="link" aria-label="Dismiss the error" onClick={onDismiss}>Dismiss</button>}
    </div>
  );
}

/** A determinate bar when the fraction is known, else an indeterminate one; always with an accessible label. */
export function Progress({ label, value }: { label: string; value?: number }) {
  return (
    <div className="progress-row">
      <progress aria-label={label} max={1} value={value} />
      {value !== undefined && <span className="muted">{Math.round(value * 100)}%</span>}
    </div>
  );
}

export function Spinner({ label }: { label: string }) {
  return <span className="spinner" role="status" aria-label={label} />;
}

export function Status({ value }: { value: string }) {
  return <span className={`status status-${value.replace(/[^a-z_]/gi, '')}`}>{value.replace(/_/g, ' ')}</span>;
}

/** Names the browser tab after the page, so that several Benchtop tabs can be told apart. */
export function useTitle(title: string): void {
  useEffect(() => {
    document.title = title ? `${title} · Benchtop` : 'Benchtop';
  }, [title]);
}

/** `heading` replaces the plain title in the header (an editable name, say); `title` still names the tab. */
export function Page({ title, heading, actions, children }: { title: string; heading?: ReactNode; actions?: ReactNode; children: ReactNode }) {
  useTitle(title);
  return (
    <section className="page" aria-labelledby="page-title">
      <header className="page-header">
        {heading ?? <h1 id="page-title">{title}</h1>}
        <div className="page-actions">{actions}</div>
      </header>
      {children}
    </section>
  );
}

export function Empty({ children }: { children: ReactNode }) {
  return <p className="empty">{children}</p>;
}

export interface Loaded<T> {
  data: T | undefined;
  error: string | undefined;
  loading: boolean;
  reload(): Promise<void>;
  setError(error: string | undefined): void;
}

/** Loads `load()` now and whenever `deps` change; optionally again every pollMs. */
export function useLoad<T>(load: () => Promise<T>, deps: unknown[], pollMs?: number): Loaded<T> {
  const [data, setData] = useState<T>();
  const [error, setError] = useState<string>();
  const [loading, setLoading] = useState(true);
  const loader = useRef(load);
  loader.current = load;
  const reload = useCallback(async () => {
    try {
      setData(await loader.current());
      setError(undefined);
    } catch (e) {
      setError((e as Error).message);
    } finally {
      setLoading(false);
    }
  }, []);
  // deps are the caller's: what the loader reads.
  useEffect(() => {
    setLoading(true);
    void reload();
    if (!pollMs) return;
    const timer = setInterval(() => void reload(), pollMs);
    return () => clearInterval(timer);
  }, deps);
  return { data, error, loading, reload, setError };
}

/** Runs an action, keeping its pending state and the API's error message for the screen to show. */
export function useAction() {
  const [pending, setPending] = useState(false);
  const [error, setError] = useState<string>();
  const run = useCallback(async <T,>(work: () => Promise<T>): Promise<T | undefined> => {
    setPending(true);
    setError(undefined);
    try {
      return await work();
    } catch (e) {
      setError((e as Error).message);
      return undefined;
    } finally {
      setPending(false);
    }
  }, []);
  return { pending, error, setError, run };
}

export const fmtTime = (iso: string | null | undefined) => (iso ? new Date(iso).toLocaleString() : '—');
/** The time of day to the second: what a list of a run's commands needs, where the date on every row only took room. */
export const fmtTimeOfDay = (iso: string) => new Date(iso).toLocaleTimeString();

export function fmtDuration(ms: number): string {
  const s = Math.max(0, Math.floor(ms / 1000));
  const h = Math.floor(s / 3600);
  const m = Math.floor((s % 3600) / 60);
  return h > 0 ? `${h}h ${String(m).padStart(2, '0')}m` : `${m}:${String(s % 60).padStart(2, '0')}`;
}

export function fmtBytes(n: number): string {
  if (n < 1024) return `${n} B`;
  const units = ['KB', 'MB', 'GB', 'TB'];
  let v = n / 1024;
  let i = 0;
  while (v >= 1024 && i < units.length - 1) {
    v /= 1024;
    i++;
  }
  return `${v.toFixed(v < 10 ? 1 : 0)} ${units[i]}`;
}

/** Re-renders every intervalMs: for elapsed times. */
export function useNow(intervalMs = 1000): number {
  const [now, setNow] = useState(Date.now());
  useEffect(() => {
    const timer = setInterval(() => setNow(Date.now()), intervalMs);
    return () => clearInterval(timer);
  }, [intervalMs]);
  return now;
}
