import { Fragment, memo, useCallback, useEffect, useMemo, useState, type CSSProperties } from 'react';
import type { FleetDevice } from '../../shared/api/devices.js';
import { api, fleetStore, useAuth, useFleet } from '../app-context.js';
import { compareVersions, isAttached, isFree } from '../device-match.js';
import { modelName, platformName } from '../../shared/phone-models.js';
import { IdleCountdown } from '../components/release-warnings.js';
import { linkTo, navigate } from '../router.js';
import { Empty, ErrorBanner, Page, Spinner, Status } from '../ui.js';
import { ProviderHealth } from '../components/provider-health.js';

export const FLEET_POLL_MS = 2000;

/** The level as text and as a bar: one element, whose bar its style sheet draws (a row is drawn for every phone). */
function Battery({ level }: { level: number | null }) {
  if (level === null) return <span className="muted">—</span>;
  return <span className={level < 20 ? 'battery low' : 'battery'} aria-label={`Battery ${level}%`} style={{ '--level': `${level}%` } as CSSProperties}>{`${level}%`}</span>;
}

type Availability = 'any' | 'free' | 'in_use' | 'unavailable';

interface FleetQuery {
  text: string;
  platform: string;
  availability: Availability;
  minVersion: string;
}

const stateOf = (d: FleetDevice) => (d.state === 'device' ? (d.held ? 'in_use' : 'free') : d.state);

/** The Fleet screen's search: text in the name, serial or version, then the platform, availability and minimum version. */
export function fleetMatches(d: FleetDevice, q: FleetQuery): boolean {
  const text = q.text.trim().toLowerCase();
  if (text && ![d.name, d.serial, d.osVersion, d.platform, d.model ?? '', modelName(d.model ?? ''), d.note ?? ''].some((v) => v.toLowerCase().includes(text))) return false;
  if (q.platform && d.platform !== q.platform) return false;
  if (q.availability === 'free' && !isFree(d)) return false;
  if (q.availability === 'in_use' && !(d.state === 'device' && d.held)) return false;
  if (q.availability === 'unavailable' && d.state === 'device') return false;
  if (/^\d+(\.\d+)*$/.test(q.minVersion.trim()) && compareVersions(d.osVersion, q.minVersion.trim()) < 0) return false;
  return true;
}

/** Who holds a phone of the caller's organization: "you", a teammate's email, or an API key's session. */
const holderName = (email: string | undefined, me: string | undefined) => (!email ? 'an API key' : email === me ? 'you' : email);

/** 24-hour local time, as the Calendar labels its hours, whatever the browser's locale. */
export const hhmm = (iso: string) => {
  const d = new Date(iso);
  return `${String(d.getHours()).padStart(2, '0')}:${String(d.getMinutes()).padStart(2, '0')}`;
};

/** A phone's booking as the Fleet says it: whose (never which other team), from when to when. */
export const bookingNote = (b: NonNullable<FleetDevice['booking']>) =>
  b.own ? `Booked for you from ${hhmm(b.startsAt)} to ${hhmm(b.endsAt)}` : `Booked from ${hhmm(b.startsAt)} to ${hhmm(b.endsAt)} by another team`;

/**
 * A new session holding this very phone, by its serial: of two like phones, the one whose row (and note: "the one with
 * the SIM") was chosen, and the booked one of a booking.
 */
export async function takePhone(device: Pick<FleetDevice, 'platform' | 'serial'>): Promise<void> {
  const session = await api.createSession();
  await api.allocateDevice(session.id, {
    filters: [
      { attribute: 'platform', operator: 'EQUALS', value: device.platform },
      { attribute: 'serial', operator: 'EQUALS', value: device.serial },
    ],
  });
  navigate(`/sessions/${session.id}`);
}

/**
 * A host name or serial ("127.0.0.1:38195"), which may break after its dots, colons and dashes when its column is
 * narrow, not mid-word: its parts as text with a <wbr> between them, no element around each (a hundred rows draw five
 * hundred elements fewer).
 */
const Address = ({ text }: { text: string }) => <>{text.split(/(?<=[.:-])/).map((part, i) => <Fragment key={i}>{i > 0 && <wbr />}{part}</Fragment>)}</>;

/**
 * The phone being taken, and what went wrong taking it: one state for the whole table rather than three hooks in each
 * of a hundred rows, all drawn with the page. A row is drawn again only when it is the one being taken.
 */
interface Taking {
  serial: string;
  pending: boolean;
  error?: string;
}

function UseThisPhone({ device, taking, onUse }: { device: FleetDevice; taking: Taking | undefined; onUse(device: FleetDevice): void }) {
  return (
    <>
      <button type="button" className="primary" disabled={taking?.pending} aria-label={`Use this phone: ${device.name} (${device.serial})`} onClick={() => onUse(device)}>
        {taking?.pending ? <Spinner label={`Taking ${device.name}`} /> : 'Use this phone'}
      </button>
      {taking?.error && <span role="alert" className="error inline">{taking.error}</span>}
    </>
  );
}

/**
 * The Phones table's columns. Its rows are CSS grids (styles.css: the browser skips drawing rows out of sight), so
 * every part of it names its table role itself: a browser that drops a table's semantics once its display changes
 * still reads it as a table.
 */
const COLUMNS: Array<{ label: string; className?: string; hidden?: boolean }> = [
  { label: 'Name' }, { label: 'Platform', className: 'col-platform' }, { label: 'Model' }, { label: 'Version' }, { label: 'Serial' },
  { label: 'Host' }, { label: 'State' }, { label: 'Battery' }, { label: 'Holder' }, { label: 'Actions', hidden: true },
];

/**
 * One phone's row, rendered again only when that phone changed: the store keeps an unchanged phone as the same
 * object from poll to poll, so a poll, or the page's sign-in finishing, does not render a hundred rows again.
 */
const FleetRow = memo(function FleetRow({ device: d, me, hostColumn, taking, onUse, onNote }: { device: FleetDevice; me: string | undefined; hostColumn: boolean; taking: Taking | undefined; onUse(device: FleetDevice): void; onNote: ((device: FleetDevice) => void) | undefined }) {
  return (
    <tr role="row" data-serial={d.serial}>
      <td role="cell">{d.name}{d.note && <span className="phone-note">{d.note}</span>}</td>
      <td role="cell" className="col-platform">{platformName(d.platform)}</td>
      <td role="cell" title={d.model}>{d.model ? modelName(d.model) : <span className="muted">—</span>}</td>
      <td role="cell">{d.osVersion}</td>
      <td role="cell"><code><Address text={d.serial} /></code></td>
      {hostColumn && <td role="cell">{d.host ? <Address text={d.host} /> : <span className="muted">this workstation</span>}</td>}
      <td role="cell">
        <Status value={stateOf(d)} />
        {/* An unauthorized or wda_unavailable phone cannot be taken: the engine says what would fix that. */}
        {d.steps && d.state !== 'gone' && <p className="steps" aria-label={`What ${d.name} needs`}>{d.steps}</p>}
      </td>
      <td role="cell"><Battery level={d.battery} /></td>
      <td role="cell">
        {d.heldBy ? (
          <>
            <a href={`/sessions/${d.heldBy.sessionId}`} onClick={linkTo(`/sessions/${d.heldBy.sessionId}`)}>
              {d.heldBy.webdriver ? 'WebDriver run by ' : ''}{holderName(d.heldBy.memberEmail, me)} · session {d.heldBy.sessionId.slice(0, 8)}
            </a>
            <IdleCountdown at={d.heldBy.idleReleaseAt} />
          </>
        ) : d.held ? <span className="muted">another organization</span> : !d.booking && <span className="muted">free</span>}
        {d.booking && <span className={d.booking.own ? 'booking-note own' : 'booking-note'}>{bookingNote(d.booking)}</span>}
      </td>
      <td role="cell">
        {isFree(d) && <UseThisPhone device={d} taking={taking} onUse={onUse} />}
        {onNote && <button type="button" className="link note-button" aria-label={`Note on ${d.name} (${d.serial})`} onClick={() => onNote(d)}>Note…</button>}
      </td>
    </tr>
  );
});

/** Every phone and Mac host of the lab, polled: who holds what shows only for the current organization. */
/**
 * The lab owner's note on one phone, edited above the table (one editor for the page, not one per row): what tells
 * identical phones apart, in the Fleet and its search.
 */
function NoteEditor({ device, onDone }: { device: FleetDevice; onDone(): void }) {
  const [note, setNote] = useState(device.note ?? '');
  const [state, setState] = useState<{ saving: boolean; error?: string }>({ saving: false });
  const save = async (value: string | null) => {
    setState({ saving: true });
    try {
      await api.setDeviceNote(device.serial, value);
      await fleetStore.getState().refresh();
      onDone();
    } catch (e) {
      setState({ saving: false, error: (e as Error).message });
    }
  };
  return (
    <form className="note-editor" aria-label={`Note on ${device.name}`} onSubmit={(e) => { e.preventDefault(); void save(note.trim() || null); }}>
      <label>
        Note on {device.name} <code>{device.serial}</code>
        <input value={note} maxLength={200} autoFocus placeholder="e.g. shelf B, SIM for SMS tests" onChange={(e) => setNote(e.target.value)} />
      </label>
      <button type="submit" className="primary" disabled={state.saving}>Save</button>
      {device.note && <button type="button" disabled={state.saving} onClick={() => void save(null)}>Remove</button>}
      <button type="button" onClick={onDone}>Cancel</button>
      {state.error && <span role="alert" className="error inline">{state.error}</span>}
    </form>
  );
}

export const FleetScreen = memo(function FleetScreen() {
  const me = useAuth((s) => s.user?.email);
  const labOwner = useAuth((s) => s.user?.labOwner ?? false);
  const [noting, setNoting] = useState<FleetDevice>();
  // Stable, so that the rows' memo holds; undefined for everyone but the lab owner, whose rows have the button.
  const onNote = useMemo(() => (labOwner ? (device: FleetDevice) => setNoting(device) : undefined), [labOwner]);
  const { devices, hosts, changes, loaded, error } = useFleet((s) => s);
  useEffect(() => fleetStore.getState().poll(FLEET_POLL_MS), []);
  const [query, setQuery] = useState<FleetQuery>({ text: '', platform: '', availability: 'any', minVersion: '' });
  const set = (patch: Partial<FleetQuery>) => setQuery((q) => ({ ...q, ...patch }));
  const [taking, setTaking] = useState<Taking>();
  // The same function from render to render, so that the rows' memo holds.
  const onUse = useCallback((device: FleetDevice) => {
    // Another team's booking takes the phone back when it starts: whoever takes it now is told first.
    const b = device.booking;
    if (b && !b.own) {
      const question = Date.parse(b.startsAt) > Date.now()
        ? `${device.name} is booked from ${hhmm(b.startsAt)} by another team: the lab takes it back for them then. Use it anyway?`
        : `${device.name} is booked by another team until ${hhmm(b.endsAt)}: you would wait in line until then. Use it anyway?`;
      if (!window.confirm(question)) return;
    }
    setTaking({ serial: device.serial, pending: true });
    takePhone(device).then(
      () => setTaking(undefined),
      (error: Error) => setTaking({ serial: device.serial, pending: false, error: error.message }),
    );
  }, []);
  const shown = useMemo(() => devices.filter((d) => fleetMatches(d, query)), [devices, query]);
  // Which host a phone is on matters once the lab has providers; a lab of one workstation is spared the column.
  const hostColumn = useMemo(() => devices.some((d) => d.host), [devices]);
  const shownFree = shown.filter(isFree).length;
  const filtering = query.text.trim() !== '' || query.platform !== '' || query.availability !== 'any' || query.minVersion.trim() !== '';

  // Unplugged phones stay listed (so that one which went missing can be seen), but only attached ones are the fleet.
  const attached = devices.filter(isAttached).length;
  const free = devices.filter(isFree).length;
  const freeSlots = hosts.reduce((n, h) => n + h.freeSlots, 0);

  return (
    <Page title="Fleet" actions={<span className="muted" aria-live="polite">{loaded ? `${free} of ${attached} phones free · ${freeSlots} Mac slots free` : ''}</span>}>
      <ErrorBanner error={error} />
      {!loaded && <Spinner label="Loading the fleet" />}
      {changes.length > 0 && (
        <ul className="changes" aria-label="Recent plug and unplug events">
          {changes.slice(0, 5).map((c) => (
            <li key={`${c.serial}-${c.at}`} className={c.change}>
              {c.name || 'A phone'} ({c.serial}) {c.change} at {new Date(c.at).toLocaleTimeString()}
            </li>
          ))}
        </ul>
      )}
      <h2>Phones</h2>
      <form className="fleet-filters" role="search" aria-label="Find phones" onSubmit={(e) => e.preventDefault()}>
        <label>
          Search
          <input type="search" value={query.text} placeholder="Name, serial, version or note" onChange={(e) => set({ text: e.target.value })} />
        </label>
        <label>
          Platform
          <select value={query.platform} onChange={(e) => set({ platform: e.target.value })}>
            <option value="">Any</option>
            <option value="android">Android</option>
            <option value="ios">iOS</option>
          </select>
        </label>
        <label>
          Availability
          <select value={query.availability} onChange={(e) => set({ availability: e.target.value as Availability })}>
            <option value="any">Any</option>
            <option value="free">Free now</option>
            <option value="in_use">In use</option>
            <option value="unavailable">Offline or unplugged</option>
          </select>
        </label>
        <label>
          Version at least
          <input value={query.minVersion} inputMode="decimal" placeholder="e.g. 13" size={8} onChange={(e) => set({ minVersion: e.target.value })} />
        </label>
        <p className="match-count" role="status" aria-live="polite">
          {loaded && (filtering ? `${shown.length} of ${devices.length} phones match · ${shownFree} free` : `${devices.length} phones · ${shownFree} free`)}
        </p>
      </form>
      {noting && <NoteEditor key={noting.serial} device={noting} onDone={() => setNoting(undefined)} />}
      {loaded && devices.length === 0 ? <Empty>No phones. Plug one in over USB with USB debugging on, or run <code>npm run demo</code>.</Empty> : loaded && shown.length === 0 ? <Empty>No phone matches that search.</Empty> : (
        <div className="table-wrap">
        <table role="table" className={hostColumn ? 'table fleet-table with-host' : 'table fleet-table'} aria-label="Phones">
          <thead role="rowgroup">
            <tr role="row">
              {COLUMNS.filter((c) => hostColumn || c.label !== 'Host').map((c) => (
                <th key={c.label} role="columnheader" className={c.className}>{c.hidden ? <span className="visually-hidden">{c.label}</span> : c.label}</th>
              ))}
            </tr>
          </thead>
          <tbody role="rowgroup">
            {/* Only a held row names its holder: the others do not draw again when the signed-in user's email arrives. */}
            {shown.map((d) => <FleetRow key={d.serial} device={d} me={d.heldBy ? me : undefined} hostColumn={hostColumn} taking={taking?.serial === d.serial ? taking : undefined} onUse={onUse} onNote={onNote} />)}
          </tbody>
        </table>
        </div>
      )}
      <ProviderHealth />
      <h2>Mac hosts</h2>
      {loaded && hosts.length === 0 ? <Empty>No Mac hosts. The lab owner adds them in Settings.</Empty> : (
        <div className="table-wrap">
        <table className="table" aria-label="Mac hosts">
          <thead>
            <tr><th>Name</th><th>Mode</th><th>Image</th><th>Machine</th><th>Health</th><th>Free slots</th><th>Your instances</th></tr>
          </thead>
          <tbody>
            {hosts.map((h) => (
              <tr key={h.id}>
                <td>{h.name}</td>
                <td>{h.mode}</td>
                <td><code>{h.image}</code></td>
                <td>{h.machine.arch}, {h.machine.cpuCores} cores, {Math.round(h.machine.memoryMb / 1024)} GB</td>
                <td><Status value={h.health} />{h.healthMessage && <span className="muted"> {h.healthMessage}</span>}</td>
                <td>{h.freeSlots} / {h.maxInstances}</td>
                <td>
                  {h.instances.length === 0 ? <span className="muted">none</span> : h.instances.map((i) => (
                    <a key={i.instanceId} href={`/sessions/${i.sessionId}`} onClick={linkTo(`/sessions/${i.sessionId}`)}>{i.instanceId.slice(0, 8)} </a>
                  ))}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
        </div>
      )}
    </Page>
  );
});
