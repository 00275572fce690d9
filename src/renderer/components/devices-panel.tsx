import { useEffect, useRef, useState, type FormEvent } from 'react';
import type { Device } from '../../shared/api/sessions.js';
import { platformName } from '../../shared/phone-models.js';
import { api, useAuth } from '../app-context.js';
import { matchCount } from '../device-match.js';
import { Empty, ErrorBanner, fmtTime, Spinner, Status, useAction, useLoad } from '../ui.js';
import { DeviceFilters, type Filter } from './device-filters.js';
import { PhoneView } from './phone-view.js';
import { WEBDRIVER_POLL_MS } from './webdriver-runs.js';
import { releaseByMe, takesFocusAfterRelease, wasReleasedHere } from './released-here.js';

const DEVICES_POLL_MS = 1500;

/** A request still in line names no phone yet: it is for the next free one of its platform. */
const nameOf = (d: Device) => d.info.name || `the next free ${platformName(d.info.platform)} phone`;

function DeviceCard({ sessionId, device, onChange }: { sessionId: string; device: Device; onChange(): void }) {
  const release = useAction();
  const queued = device.status === 'queued';
  return (
    <article className="card device" aria-label={`${nameOf(device)} ${device.status}`}>
      <header className="card-header">
        <div>
          <h3>{device.info.name || `Next free ${platformName(device.info.platform)} phone`}</h3>
          <span className="muted">{platformName(device.info.platform)} {device.info.osVersion}{device.info.serial && <> · <code>{device.info.serial}</code></>}</span>
        </div>
        <Status value={device.status} />
      </header>
      {(device.status === 'provisioning' || device.status === 'queued') && (
        <p className="muted"><Spinner label="Waiting for the phone" /> {device.status === 'queued' ? 'Every matching phone is busy: waiting in line for the next free one.' : 'Waking, unlocking and going home…'}</p>
      )}
      {device.status === 'offline' && <p className="muted">The phone is unplugged; it stays yours if it comes back within the grace period.</p>}
      <footer className="button-row">
        <button
          type="button"
          className="danger"
          disabled={release.pending}
          onClick={() => void release.run(async () => {
            await releaseByMe(sessionId, device);
            onChange();
          })}
        >
          {/* A request in line holds no phone yet: it is left, not released. */}
          {queued ? 'Leave the queue' : `Release ${device.info.name}`}
        </button>
        <span className="muted">{queued ? 'waiting' : 'held'} since {fmtTime(device.createdAt)}</span>
        {release.error && <span role="alert" className="error inline">{release.error}</span>}
      </footer>
    </article>
  );
}

const FLEET_POLL_MS = 5000;
/** Releases listed in full; older ones of a long session fold under them. */
const RELEASES_SHOWN = 5;

/**
 * Why a phone left the session, as a sentence: the lab's reasons, or a person's (or a client's) release. `byYou`: you
 * released it; `by`: the email of the member who did; `queued`: it never got a phone (it left the queue).
 */
export function releaseWhy(reason: string | undefined, { byYou = false, queued = false, by }: { byYou?: boolean; queued?: boolean; by?: string } = {}): string {
  switch (reason) {
    case undefined:
      if (byYou) return queued ? 'you left the queue before a phone was free.' : 'you released it.';
      // The API's releasedBy, named as the organization's member list names them.
      if (by) return queued ? `${by} took the request out of the queue before a phone was free.` : `${by} released it.`;
      return queued
        ? 'the request left the queue before a phone was free: a member of your organization cancelled it (here, through the API or a test run).'
        : 'released by a member of your organization (here, through the API or by a test run).';
    case 'idle_timeout': return 'nobody used it for the lab\'s idle time, so the lab gave it back to the pool (idle timeout).';
    case 'reserved': return 'another team\'s booking of it started, so the lab handed it to them (reserved by another team).';
    case 'device_lost': return 'it was unplugged and did not come back within the grace period (device lost).';
    case 'install_failed': return 'an app it was to install could not be installed.';
    case 'provisioning_failed': return 'it could not be woken, unlocked and sent home to start.';
    case 'member_removed': return 'the member who held it was removed from the organization (member removed).';
    default: return `the lab released it (${reason.replace(/_/g, ' ')}).`;
  }
}

function Release({ device: d, emailOf }: { device: Device; emailOf(userId: string): string | undefined }) {
  const me = useAuth((s) => s.user?.id);
  const line = useRef<HTMLLIElement>(null);
  // Release now (or Leave the queue) went away with the phone: what it did is where the reader is taken.
  useEffect(() => {
    if (takesFocusAfterRelease(d.id)) line.current?.focus();
  }, [d.id]);
  const queued = !d.info.serial;
  const by = d.releasedBy ? emailOf(d.releasedBy) : undefined;
  const why = releaseWhy(d.releaseReason, { byYou: wasReleasedHere(d.id) || (d.releasedBy != null && d.releasedBy === me), queued, by });
  return (
    <li ref={line} tabIndex={-1} className={d.releaseReason ? 'by-lab' : undefined}>
      {queued
        ? <>The request for <strong>{nameOf(d)}</strong> ended at {fmtTime(d.releasedAt)}: {why}</>
        : <><strong>{d.info.name}</strong> (<code>{d.info.serial}</code>) was released at {fmtTime(d.releasedAt)}: {why}</>}
    </li>
  );
}

/** The session's released phones, newest first, each with when and why: a phone taken by the lab does not just vanish. */
function Releases({ released }: { released: Device[] }) {
  const organizationId = useAuth((s) => s.organizationId);
  // Who released each phone, by email: the member list is visible to every member.
  const members = useLoad(() => (organizationId ? api.members(organizationId) : Promise.resolve(undefined)), [organizationId]);
  const emailOf = (userId: string) => members.data?.data.find((m) => m.userId === userId)?.email;
  const newest = [...released].sort((a, b) => (b.releasedAt ?? '').localeCompare(a.releasedAt ?? ''));
  const earlier = newest.slice(RELEASES_SHOWN);
  return (
    <section className="releases" aria-label="Released phones">
      <h3>Released from this session</h3>
      <ul>{newest.slice(0, RELEASES_SHOWN).map((d) => <Release key={d.id} device={d} emailOf={emailOf} />)}</ul>
      {earlier.length > 0 && (
        <details>
          <summary>{earlier.length} earlier</summary>
          <ul>{earlier.map((d) => <Release key={d.id} device={d} emailOf={emailOf} />)}</ul>
        </details>
      )}
    </section>
  );
}

/** How many of the lab's phones the filters match, and how many are free: what allocating would get now. */
function MatchPreview({ filters }: { filters: Filter[] }) {
  const fleet = useLoad(() => api.fleetDevices(), [], FLEET_POLL_MS);
  if (!fleet.data) return null;
  const { matching, free } = matchCount(fleet.data.data, filters);
  const text = matching === 0
    ? 'No phone in the lab matches these filters.'
    : `${matching} phone${matching === 1 ? '' : 's'} match${matching === 1 ? 'es' : ''} · ${free} free now${free === 0 ? ': you would wait in line' : ''}.`;
  return <p className="match-preview muted" role="status" aria-live="polite">{text}</p>;
}

function AllocateForm({ sessionId, onAllocated }: { sessionId: string; onAllocated(): void }) {
  const [filters, setFilters] = useState<Filter[]>([{ attribute: 'platform', operator: 'EQUALS', value: 'android' }]);
  const allocate = useAction();
  const submit = async (event: FormEvent) => {
    event.preventDefault();
    // An empty row is left out rather than refused: the version range button adds two rows at once.
    const body = { filters: filters.filter((f, i) => i === 0 || f.value.trim() !== '').map((f) => ({ ...f, value: f.value.trim() })) };
    if ((await allocate.run(() => api.allocateDevice(sessionId, body))) !== undefined) onAllocated();
  };
  return (
    <form className="card allocate" onSubmit={(e) => void submit(e)} aria-label="Allocate a phone">
      <DeviceFilters filters={filters} onChange={setFilters} />
      <MatchPreview filters={filters} />
      <button type="submit" className="primary" disabled={allocate.pending}>{allocate.pending ? <Spinner label="Allocating" /> : 'Allocate phone'}</button>
      <ErrorBanner error={allocate.error} onDismiss={() => allocate.setError(undefined)} />
    </form>
  );
}

export function DevicesPanel({ sessionId, ended, heldBy }: { sessionId: string; ended?: boolean; heldBy?: string }) {
  const devices = useLoad(() => api.devices(sessionId), [sessionId], DEVICES_POLL_MS);
  // The WebDriver runs driving this session's phones: each shows beside its phone's screen, which is watch-only then.
  const runs = useLoad(() => api.webDriverRuns(sessionId), [sessionId], WEBDRIVER_POLL_MS);

  const all = devices.data?.data ?? [];
  const active = all.filter((d) => d.status !== 'released');
  const released = all.filter((d) => d.status === 'released');
  // A phone shown here that goes offline (a provider's link drops, a cable) keeps its place: its screen keeps the
  // last frame, marked stale, and plays again when the phone is back. Swapped for a card at the next poll, it lost
  // both. One already offline when the page opened has no frame to keep, and gets the card until it is back.
  const shown = useRef(new Set<string>());
  const live = active.filter((d) => d.info.serial && (d.status === 'in_use' || (d.status === 'offline' && shown.current.has(d.id))));
  for (const d of live) shown.current.add(d.id);
  const waiting = active.filter((d) => !live.includes(d));
  const reload = () => void devices.reload();
  const runOf = (d: Device) => runs.data?.data.find((r) => r.serial === d.info.serial);

  return (
    <div className="panel">
      {/* With a phone in use its screen comes first, above the fold; taking another phone is one click away. */}
      {live.map((d) => <PhoneView key={d.id} sessionId={sessionId} device={d} onChange={reload} heldBy={heldBy} run={runOf(d)} onTakenOver={() => { void runs.reload(); reload(); }} />)}
      <div className="device-grid">
        {waiting.map((d) => <DeviceCard key={d.id} sessionId={sessionId} device={d} onChange={reload} />)}
      </div>
      <ErrorBanner error={devices.error} />
      {devices.loading && !devices.data && <Spinner label="Loading phones" />}
      {devices.data && active.length === 0 && <Empty>{ended ? 'This session has ended: it holds no phones.' : released.length > 0 ? 'No phone in this session now.' : 'No phone in this session yet.'}</Empty>}
      {/* With no phone left, what happened to the last one comes first, above the form that takes another. */}
      {active.length === 0 && released.length > 0 && <Releases released={released} />}
      {/* One form throughout (its filters survive a release), open while the session holds no phone. */}
      {!ended && (
        <details className="another-phone" open={active.length === 0 || undefined}>
          <summary>{active.length === 0 ? 'Take a phone' : 'Take another phone'}</summary>
          <AllocateForm sessionId={sessionId} onAllocated={reload} />
        </details>
      )}
      {active.length > 0 && released.length > 0 && <Releases released={released} />}
    </div>
  );
}
