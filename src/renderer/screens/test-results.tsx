import { useEffect, useRef, useState } from 'react';
import type { Asset, TestResult, TestResultStatus } from '../../shared/api/test-results.js';
import type { Static } from 'typebox';
import { api } from '../app-context.js';
import { filesRemoved, isWebDriverRun, phoneOf, WebDriverResult } from '../components/webdriver-result.js';
import { linkTo, useQueryParam } from '../router.js';
import { BUILD, tagPath } from '../../shared/test-result-tags.js';
import { BuildLink } from '../components/build-link.js';
import { Empty, ErrorBanner, fmtBytes, fmtDuration, fmtTime, Page, Spinner, Status, useLoad } from '../ui.js';

/** stats is free-form JSON, as the reporter sent it. */
const statsOf = (r: TestResult) => (r.stats ?? {}) as Record<string, unknown>;

/** How often the list is read while a run is unfinished. */
const RUNNING_POLL_MS = 3000;
/** How often the list looks for new runs while none it shows is running. */
const LIST_POLL_MS = 5000;
const STATUSES: Array<Static<typeof TestResultStatus>> = ['queued', 'running', 'passed', 'failed', 'skipped', 'interrupted'];
/** A build's runs are read in one page, so that its counts are the whole build's (a nightly suite's hundreds of runs). */
const BUILD_PAGE = 500;

/** "Build 1234: 12 runs · 10 passed, 1 failed, 1 running": a build at a glance, as a cloud lab's build page opens. */
function BuildSummary({ tag, results, complete }: { tag: string; results: TestResult[]; complete: boolean }) {
  const counts = STATUSES.map((s) => [s, results.filter((r) => r.status === s).length] as const).filter(([, n]) => n > 0);
  const name = tag.startsWith(BUILD) ? <>Build <strong>{tag.slice(BUILD.length)}</strong></> : <>Tag <strong>{tag}</strong></>;
  return (
    <section className="summary" aria-label={tag.startsWith(BUILD) ? 'Build' : 'Tag'}>
      <p>
        {name}: {results.length}{complete ? '' : '+'} {results.length === 1 ? 'run' : 'runs'}
        {counts.length > 0 && <> · {counts.map(([s, n]) => `${n} ${s}`).join(', ')}</>}
        {' '}<a href="/test-results" onClick={linkTo('/test-results')}>All runs</a>
      </p>
    </section>
  );
}

export function TestResultsScreen() {
  const [status, setStatus] = useState<Static<typeof TestResultStatus> | ''>('');
  const [text, setText] = useState('');
  const [pages, setPages] = useState<TestResult[]>([]);
  const [cursor, setCursor] = useState<string>();
  // One build's (or tag's) runs when the address names one: a link a CI log prints, or a build clicked below.
  const tag = useQueryParam('tag');
  const limit = tag ? BUILD_PAGE : 50;
  // Polled, so that a run a CI job or a teammate starts shows up without a reload.
  const first = useLoad(() => api.testResults({ limit, status: status || undefined, tag }), [status, tag], LIST_POLL_MS);
  const [more, setMore] = useState<{ loading: boolean; error?: string }>({ loading: false });

  // A poll refreshes the first page in place: the pages loaded below it stay, and a new filter starts afresh.
  const pagesOf = useRef(`${status} ${tag}`);
  useEffect(() => {
    const fresh = first.data?.data ?? [];
    const sameFilter = pagesOf.current === `${status} ${tag}`;
    pagesOf.current = `${status} ${tag}`;
    setPages((old) => {
      const oldest = fresh.at(-1)?.createdAt;
      const below = sameFilter && oldest ? old.filter((r) => r.createdAt < oldest) : [];
      if (below.length === 0) setCursor(first.data?.nextCursor);
      return [...fresh, ...below];
    });
  }, [first.data]);

  // While a run is queued or running, the list is read again every few seconds, so that it shows how it finished.
  const unfinished = pages.some((r) => r.status === 'queued' || r.status === 'running');
  useEffect(() => {
    if (!unfinished) return;
    const timer = setInterval(() => void first.reload(), RUNNING_POLL_MS);
    return () => clearInterval(timer);
  }, [unfinished, first.reload]);

  const loadMore = async () => {
    setMore({ loading: true });
    try {
      const page = await api.testResults({ limit, status: status || undefined, tag, before: cursor });
      setPages((p) => [...p, ...page.data]);
      setCursor(page.nextCursor);
      setMore({ loading: false });
    } catch (e) {
      setMore({ loading: false, error: (e as Error).message });
    }
  };

  const needle = text.trim().toLowerCase();
  // A WebDriver run's phone too: "which runs on the Pixel 8 failed" is a question a lab's list answers.
  const shown = pages.filter((r) => !needle || [r.name, r.git?.branch ?? '', phoneOf(r) ?? '', ...r.tags].some((field) => field.toLowerCase().includes(needle)));

  return (
    <Page title="Test results">
      {tag && first.data && <BuildSummary tag={tag} results={pages} complete={!cursor} />}
      <div className="toolbar">
        <label>
          Status
          <select value={status} onChange={(e) => setStatus(e.target.value as typeof status)}>
            <option value="">any</option>
            {STATUSES.map((s) => <option key={s} value={s}>{s}</option>)}
          </select>
        </label>
        <label>
          Name, branch, tag or phone
          <input type="search" value={text} onChange={(e) => setText(e.target.value)} placeholder="Filter" />
        </label>
      </div>
      <ErrorBanner error={first.error ?? more.error} />
      {/* Only the first load spins: a poll of an empty list keeps its words rather than flash an empty table. */}
      {!first.data && first.loading && <Spinner label="Loading test results" />}
      {first.data && shown.length === 0 ? (
        <Empty>
          {status || needle || tag
            ? 'No test result matches these filters.'
            : <>No test results yet. A test run shows here once its reporter posts to <code>/api/v1/test-results</code> (WebDriver runs through the lab post theirs themselves).</>}
        </Empty>
      ) : shown.length > 0 && (
        <table className="table" aria-label="Test results">
          <thead><tr><th>Name</th><th>Status</th><th>Build</th><th>Branch</th><th>Commit</th><th>Passed / failed</th><th>Created</th></tr></thead>
          <tbody>
            {shown.map((r) => (
              <tr key={r.id}>
                <td>
                  <a href={`/test-results/${r.id}`} onClick={linkTo(`/test-results/${r.id}`)}>{r.name}</a>
                  {isWebDriverRun(r) && <span className="muted"> · WebDriver on {phoneOf(r) ?? 'a phone'}</span>}
                </td>
                {/* Why it ended so, in its reporter's or client's words: a build's failures triaged from the list. */}
                <td><Status value={r.status} />{r.reason && <div className="muted list-reason" title={r.reason}>{r.reason}</div>}</td>
                <td><BuildLink result={r} otherwise={<span className="muted">—</span>} /></td>
                <td>{r.git?.branch ?? <span className="muted">—</span>}</td>
                <td>{r.git?.commitSha ? <code>{String(r.git.commitSha).slice(0, 8)}</code> : <span className="muted">—</span>}</td>
                {/* A WebDriver run has no tests to count: its commands and their failures are on its page. */}
                <td>{r.stats && !isWebDriverRun(r) ? `${String(statsOf(r).expected ?? '—')} / ${String(statsOf(r).unexpected ?? '—')}` : <span className="muted">—</span>}</td>
                <td>{fmtTime(r.createdAt)}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      {cursor && <button type="button" disabled={more.loading} onClick={() => void loadMore()}>{more.loading ? <Spinner label="Loading" /> : 'Load older results'}</button>}
    </Page>
  );
}

/** An asset is fetched with the bearer; images are shown inline, anything else is saved under its name. */
function AssetItem({ resultId, asset }: { resultId: string; asset: Asset }) {
  const image = asset.contentType.startsWith('image/');
  const [url, setUrl] = useState<string>();
  const [error, setError] = useState<string>();
  const [busy, setBusy] = useState(false);
  useEffect(() => {
    if (!image) return;
    let revoke: string | undefined;
    void api.assetBlob(resultId, asset.id).then((b) => setUrl((revoke = URL.createObjectURL(b))), (e: Error) => setError(e.message));
    return () => {
      if (revoke) URL.revokeObjectURL(revoke);
    };
  }, [resultId, asset.id, image]);
  const download = async () => {
    setBusy(true);
    try {
      const href = URL.createObjectURL(await api.assetBlob(resultId, asset.id));
      const a = document.createElement('a');
      a.href = href;
      a.download = asset.name;
      a.click();
      setTimeout(() => URL.revokeObjectURL(href), 1000);
    } catch (e) {
      setError((e as Error).message);
    } finally {
      setBusy(false);
    }
  };
  return (
    <figure className="asset">
      {image && (url ? <img src={url} alt={asset.name} /> : !error && <Spinner label={`Loading ${asset.name}`} />)}
      <figcaption>
        <span>{asset.name}</span> <span className="muted">{fmtBytes(asset.size)}</span>
        <button type="button" disabled={busy} aria-label={`Download ${asset.name}`} onClick={() => void download()}>{busy ? 'Downloading…' : 'Download'}</button>
      </figcaption>
      <ErrorBanner error={error} />
    </figure>
  );
}

const BackToResults = () => <p><a href="/test-results" onClick={linkTo('/test-results')}>← All test results</a></p>;

export function TestResultScreen({ id }: { id: string }) {
  const result = useLoad(() => api.testResult(id), [id]);
  const assets = useLoad(() => api.assets(id), [id]);
  const r = result.data;
  if (!r) return <Page title="Test result"><BackToResults />{result.loading ? <Spinner label="Loading" /> : <ErrorBanner error={result.error} />}</Page>;
  // A run of the lab's /wd/hub has no Playwright figures: its video, commands and logs instead.
  if (isWebDriverRun(r)) {
    return <Page title={r.name} actions={<Status value={r.status} />}><WebDriverResult result={r} assets={assets.data?.data} back={<BackToResults />} /></Page>;
  }
  const stats = statsOf(r);
  const duration = typeof stats.duration === 'number' ? fmtDuration(stats.duration) : undefined;
  return (
    <Page title={r.name} actions={<Status value={r.status} />}>
      <BackToResults />
      <div className="stats" aria-label="Statistics">
        {(['expected', 'unexpected', 'flaky', 'skipped'] as const).map((k) => (
          <div key={k} className={`stat stat-${k}`}><span className="stat-value">{String(stats[k] ?? '—')}</span><span className="stat-label">{k}</span></div>
        ))}
        <div className="stat"><span className="stat-value">{duration ?? '—'}</span><span className="stat-label">duration</span></div>
      </div>
      <h2>Git</h2>
      {r.git ? (
        <dl className="facts">
          <dt>Branch</dt><dd>{r.git.branch ?? '—'}</dd>
          <dt>Commit</dt><dd><code>{r.git.commitSha ?? '—'}</code></dd>
          <dt>Message</dt><dd>{r.git.commitMessage ?? '—'}</dd>
          <dt>Author</dt><dd>{r.git.authorName ?? '—'}</dd>
        </dl>
      ) : <Empty>The reporter sent no git information.</Empty>}
      <h2>Run</h2>
      <dl className="facts">
        {r.reason && <><dt>Reason</dt><dd>{r.reason}</dd></>}
        <dt>Started</dt><dd>{fmtTime(r.startedAt)}</dd>
        <dt>Finished</dt><dd>{fmtTime(r.finishedAt)}</dd>
        <dt>Reporter</dt><dd>{r.userAgent ?? '—'}</dd>
        <dt>Tags</dt><dd>{r.tags.length ? r.tags.map((t) => <a key={t} className="chip" href={tagPath(t)} onClick={linkTo(tagPath(t))} title={`Runs tagged ${t}`}>{t}</a>) : '—'}</dd>
        {r.sessionId && <><dt>Session</dt><dd><a href={`/sessions/${r.sessionId}`} onClick={linkTo(`/sessions/${r.sessionId}`)}>{r.sessionId.slice(0, 8)}</a></dd></>}
      </dl>
      <h2>Assets</h2>
      <ErrorBanner error={assets.error} />
      {assets.data && assets.data.data.length === 0 && <Empty>{r.filesRemovedAt ? filesRemoved(r.filesRemovedAt) : 'No assets were uploaded.'}</Empty>}
      <div className="gallery">{assets.data?.data.map((a) => <AssetItem key={a.id} resultId={id} asset={a} />)}</div>
    </Page>
  );
}
