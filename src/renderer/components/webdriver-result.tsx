import { useEffect, useMemo, useRef, useState, type KeyboardEvent, type ReactNode } from 'react';
import type { Asset, TestResult } from '../../shared/api/test-results.js';
import { api } from '../app-context.js';
import { linkTo } from '../router.js';
import { buildOf } from '../../shared/test-result-tags.js';
import { BuildLink } from './build-link.js';
import { ErrorBanner, fmtBytes, fmtDuration, fmtTime, Spinner, Status } from '../ui.js';
import { currentCommand, fmtOffset, noVideoReason, parseCommandsLog, shortIds, videoOffset, type LoggedCommand } from '../webdriver-log.js';

/** Why a result has no files: the lab removed them once they were older than its lab settings keep them. */
export const filesRemoved = (at: string) => noVideoReason({}, fmtTime(at));

/** A log shown inline is its newest part at most: a week-long run's Appium log is for downloading. */
const INLINE_LOG_BYTES = 256 * 1024;
const LOG_NAMES = ['commands.log', 'appium.log', 'logcat.txt', 'syslog.txt'] as const;
const LOG_LABELS: Record<string, string> = { 'commands.log': 'Commands', 'appium.log': 'Appium', 'logcat.txt': 'Logcat', 'syslog.txt': 'Syslog' };

/** A test result kept by the lab's /wd/hub for a WebDriver run (it tags its own). */
export const isWebDriverRun = (r: TestResult): boolean => r.tags.includes('webdriver') && r.userAgent === 'Benchtop WebDriver';

/** A command's words with an element's id cut short (the whole line in its title, when it was cut). */
export function CommandWords({ what, className }: { what: string; className?: string }) {
  const shown = shortIds(what);
  return <code className={className} title={shown === what ? undefined : what}>{shown}</code>;
}

/** The phone a WebDriver run drove, by its name, as the lab recorded it in the result's environment. */
export function phoneOf(r: TestResult): string | undefined {
  const environment = r.environment && typeof r.environment === 'object' ? (r.environment as Record<string, unknown>) : {};
  return typeof environment.device === 'string' ? environment.device : undefined;
}

/** An asset's bytes, fetched with the bearer: as text, or as an object URL the page revokes when it leaves. */
function useAsset(resultId: string, asset: Asset | undefined, as: 'text' | 'url'): { text?: string; url?: string; error?: string } {
  const [state, setState] = useState<{ text?: string; url?: string; error?: string }>({});
  useEffect(() => {
    // Another asset's bytes are not shown while this one's load.
    setState({});
    if (!asset) return;
    let revoke: string | undefined;
    let live = true;
    void api.assetBlob(resultId, asset.id).then(
      async (blob) => {
        if (as === 'url') {
          revoke = URL.createObjectURL(blob);
          if (live) setState({ url: revoke });
          return;
        }
        const tail = blob.size > INLINE_LOG_BYTES ? blob.slice(blob.size - INLINE_LOG_BYTES) : blob;
        if (live) setState({ text: await tail.text() });
      },
      (e: Error) => live && setState({ error: e.message }),
    );
    return () => {
      live = false;
      if (revoke) URL.revokeObjectURL(revoke);
    };
  }, [resultId, asset?.id, as]);
  return state;
}

async function download(resultId: string, asset: Asset): Promise<void> {
  const href = URL.createObjectURL(await api.assetBlob(resultId, asset.id));
  const a = document.createElement('a');
  a.href = href;
  a.download = asset.name;
  a.click();
  setTimeout(() => URL.revokeObjectURL(href), 1000);
}

function DownloadButton({ resultId, asset }: { resultId: string; asset: Asset }) {
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string>();
  return (
    <>
      <button type="button" disabled={busy} aria-label={`Download ${asset.name}`} onClick={() => {
        setBusy(true);
        download(resultId, asset).catch((e: Error) => setError(e.message)).finally(() => setBusy(false));
      }}>
        {busy ? 'Downloading…' : `Download ${asset.name}`}
      </button>
      <span className="muted">{fmtBytes(asset.size)}</span>
      {error && <span role="alert" className="error inline">{error}</span>}
    </>
  );
}

/** The commands beside the video: each one seeks the video to its moment; failed ones are marked. */
function CommandList({ commands, offsets, current, onSeek }: { commands: LoggedCommand[]; offsets: number[]; current: number; onSeek?(index: number): void }) {
  return (
    <ol className="run-commands" aria-label="Commands">
      {commands.map((c, i) => {
        const offset = offsets[i]!;
        const failed = c.status >= 400;
        return (
          <li key={i} className={failed ? 'failed' : undefined}>
            <button type="button" aria-current={i === current ? 'true' : undefined} disabled={!onSeek} title={onSeek ? 'Play the video from this command' : undefined} onClick={() => onSeek?.(i)}>
              <span className="run-command-time">{fmtOffset(offset)}</span>
              <CommandWords what={c.what} className="run-command-what" />
              <span className="run-command-status">{failed ? <><span className="visually-hidden">failed, </span>{c.status}</> : c.status}</span>
              <span className="run-command-ms muted">{c.ms} ms</span>
              {c.error && <span className="run-command-error">{c.error}</span>}
            </button>
          </li>
        );
      })}
    </ol>
  );
}

/** One log inline (its newest part), its tab's download beside it. */
function Logs({ resultId, logs }: { resultId: string; logs: Asset[] }) {
  const [tab, setTab] = useState(logs[0]?.name);
  const shown = logs.find((l) => l.name === tab) ?? logs[0];
  const text = useAsset(resultId, shown, 'text');
  if (!shown) return <p className="muted">The run kept no logs.</p>;
  const onKeyDown = (event: KeyboardEvent) => {
    const step = event.key === 'ArrowRight' ? 1 : event.key === 'ArrowLeft' ? -1 : 0;
    if (!step) return;
    const next = logs[(logs.indexOf(shown) + step + logs.length) % logs.length]!;
    setTab(next.name);
    document.getElementById(`log-tab-${next.name}`)?.focus();
  };
  return (
    <section className="run-logs" aria-labelledby="run-logs-title">
      <h2 id="run-logs-title">Logs</h2>
      <div role="tablist" aria-label="Logs" className="tabs" onKeyDown={onKeyDown}>
        {logs.map((l) => (
          <button key={l.name} id={`log-tab-${l.name}`} role="tab" type="button" aria-selected={l === shown} aria-controls="log-panel" tabIndex={l === shown ? 0 : -1} onClick={() => setTab(l.name)}>
            {LOG_LABELS[l.name] ?? l.name}
          </button>
        ))}
      </div>
      <div id="log-panel" role="tabpanel" aria-labelledby={`log-tab-${shown.name}`}>
        <div className="button-row"><DownloadButton resultId={resultId} asset={shown} /></div>
        {shown.size > INLINE_LOG_BYTES && <p className="muted">Showing the last {fmtBytes(INLINE_LOG_BYTES)} of {fmtBytes(shown.size)}: download it for all of it.</p>}
        <ErrorBanner error={text.error} />
        {text.text === undefined && !text.error ? <Spinner label={`Loading ${shown.name}`} /> : <pre className="run-log" tabIndex={0} aria-label={shown.name}>{text.text}</pre>}
      </div>
    </section>
  );
}

/**
 * A WebDriver run's result as cloud labs show one: the video played in the page with the commands beside it (a click
 * seeks the video to the command), the status and its reason, the phone, each log inline, and every file to download.
 */
export function WebDriverResult({ result: r, assets, back }: { result: TestResult; assets: Asset[] | undefined; back: ReactNode }) {
  const stats = (r.stats ?? {}) as Record<string, unknown>;
  const environment = (r.environment && typeof r.environment === 'object' ? r.environment : {}) as Record<string, unknown>;
  const byName = (name: string) => assets?.find((a) => a.name === name);
  const video = useAsset(r.id, byName('video.mp4'), 'url');
  const log = useAsset(r.id, byName('commands.log'), 'text');
  const commands = useMemo(() => (log.text ? parseCommandsLog(log.text) : []), [log.text]);
  const videoStart = Date.parse(typeof stats.videoStartedAt === 'string' ? stats.videoStartedAt : r.startedAt ?? r.createdAt);
  const player = useRef<HTMLVideoElement>(null);
  const offsets = useMemo(() => commands.map((c) => videoOffset(c.at, videoStart)), [commands, videoStart]);
  const [time, setTime] = useState(0);
  const [picked, setPicked] = useState<number>();
  const current = currentCommand(offsets, time, picked);
  const seek = (index: number) => {
    const v = player.current;
    if (!v) return;
    v.currentTime = offsets[index]!;
    setTime(offsets[index]!);
    setPicked(index);
  };
  const logs = LOG_NAMES.map(byName).filter((a): a is Asset => a !== undefined);
  const phone = phoneOf(r);
  const serial = typeof environment.serial === 'string' ? environment.serial : undefined;
  const failed = commands.filter((c) => c.status >= 400).length;

  return (
    <>
      {back}
      <dl className="facts run-summary" aria-label="Run">
        <dt>Status</dt><dd><Status value={r.status} />{r.reason && <span className="run-reason"> {r.reason}</span>}</dd>
        <dt>Phone</dt><dd>{phone ?? '—'}{serial && <> · <code>{serial}</code></>}{typeof environment.platformVersion === 'string' && <span className="muted"> · {r.tags.includes('ios') ? 'iOS' : 'Android'} {environment.platformVersion}</span>}</dd>
        <dt>Duration</dt><dd>{typeof stats.duration === 'number' ? fmtDuration(stats.duration) : '—'} · {commands.length} commands{failed > 0 && <span className="run-failed-count"> · {failed} failed</span>}</dd>
        {buildOf(r) !== undefined && <><dt>Build</dt><dd><BuildLink result={r} /></dd></>}
        <dt>Started</dt><dd>{fmtTime(r.startedAt)}</dd>
        {r.sessionId && <><dt>Session</dt><dd><a href={`/sessions/${r.sessionId}`} onClick={linkTo(`/sessions/${r.sessionId}`)}>{r.sessionId.slice(0, 8)}</a></dd></>}
      </dl>
      <div className="run-replay">
        <section className="run-video" aria-labelledby="run-video-title">
          <h2 id="run-video-title">Video</h2>
          <ErrorBanner error={video.error} />
          {!byName('video.mp4') && assets && <p className="muted">{noVideoReason(stats, r.filesRemovedAt ? fmtTime(r.filesRemovedAt) : undefined)}</p>}
          {video.url && <video ref={player} src={video.url} controls preload="metadata" aria-label={`Video of the run on ${phone ?? 'the phone'}`} onTimeUpdate={(e) => setTime(e.currentTarget.currentTime)} onSeeked={(e) => setTime(e.currentTarget.currentTime)} />}
          {byName('video.mp4') && !video.url && !video.error && <Spinner label="Loading the video" />}
        </section>
        <section className="run-command-list" aria-labelledby="run-commands-title">
          <h2 id="run-commands-title">Commands</h2>
          <ErrorBanner error={log.error} />
          {log.text === undefined && !log.error && byName('commands.log') ? <Spinner label="Loading the commands" /> : <CommandList commands={commands} offsets={offsets} current={current} onSeek={video.url ? seek : undefined} />}
        </section>
      </div>
      <Logs resultId={r.id} logs={logs} />
      <section aria-labelledby="run-files-title">
        <h2 id="run-files-title">Files</h2>
        {r.filesRemovedAt && assets?.length === 0 && <p className="muted">{filesRemoved(r.filesRemovedAt)}</p>}
        <ul className="run-files">
          {assets?.map((a) => <li key={a.id}><DownloadButton resultId={r.id} asset={a} /></li>)}
        </ul>
      </section>
    </>
  );
}
