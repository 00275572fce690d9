import { useState, type FormEvent } from 'react';
import type { Device } from '../../shared/api/sessions.js';
import { api } from '../app-context.js';
import { Empty, ErrorBanner, fmtTime, Spinner, Status, useAction, useLoad } from '../ui.js';
import { DeviceFilters, type Filter } from './device-filters.js';
import { LiveScreen } from './live-screen.js';

const DEVICES_POLL_MS = 1500;

function InstallApp({ sessionId, device }: { sessionId: string; device: Device }) {
  const files = useLoad(() => api.files({ limit: 100 }), []);
  const [fileId, setFileId] = useState('');
  const [launch, setLaunch] = useState(true);
  const install = useAction();
  const [done, setDone] = useState<string>();
  const ready = (files.data?.data ?? []).filter((f) => f.status === 'ready' && (!f.platform || f.platform === device.info.platform));
  const submit = async (event: FormEvent) => {
    event.preventDefault();
    setDone(undefined);
    const result = await install.run(() => api.install(sessionId, device.info.serial!, fileId, launch));
    if (result) setDone(`Installed ${result.bundleId}${result.launched ? ' and launched it' : ''}.`);
  };
  return (
    <form className="inline-form" onSubmit={(e) => void submit(e)}>
      <label>
        Install an app
        <select value={fileId} onChange={(e) => setFileId(e.target.value)} required>
          <option value="">{ready.length ? 'Choose an uploaded file' : `No ${device.info.platform} app uploaded yet (Files & Apps)`}</option>
          {ready.map((f) => <option key={f.id} value={f.id}>{f.filename}{f.bundleId ? ` (${f.bundleId})` : ''}</option>)}
        </select>
      </label>
      <label className="toggle"><input type="checkbox" checked={launch} onChange={(e) => setLaunch(e.target.checked)} /> Launch it</label>
      <button type="submit" disabled={!fileId || install.pending}>{install.pending ? <Spinner label="Installing" /> : 'Install'}</button>
      {done && <span role="status" className="ok">{done}</span>}
      <ErrorBanner error={install.error ?? files.error} />
    </form>
  );
}

function DeviceCard({ sessionId, device, onChange }: { sessionId: string; device: Device; onChange(): void }) {
  const release = useAction();
  const live = device.status === 'in_use' && device.info.serial;
  return (
    <article className="card device" aria-label={`${device.info.name} ${device.status}`}>
      <header className="card-header">
        <div>
          <h3>{device.info.name}</h3>
          <span className="muted">{device.info.platform} {device.info.osVersion}{device.info.serial && <> · <code>{device.info.serial}</code></>}</span>
        </div>
        <Status value={device.status} />
      </header>
      {(device.status === 'provisioning' || device.status === 'queued') && (
        <p className="muted"><Spinner label="Waiting for the phone" /> {device.status === 'queued' ? 'Every matching phone is busy: waiting in line for the next free one.' : 'Waking, unlocking and going home…'}</p>
      )}
      {device.status === 'offline' && <p className="muted">The phone is unplugged; it stays yours if it comes back within the grace period.</p>}
      {live && <LiveScreen sessionId={sessionId} serial={device.info.serial!} name={device.info.name} />}
      {live && <InstallApp sessionId={sessionId} device={device} />}
      <footer className="button-row">
        <button
          type="button"
          className="danger"
          disabled={release.pending}
          onClick={() => void release.run(async () => {
            await api.releaseDevice(sessionId, device.info.serial ?? device.id);
            onChange();
          })}
        >
          Release {device.info.name}
        </button>
        <span className="muted">since {fmtTime(device.createdAt)}</span>
      </footer>
      <ErrorBanner error={release.error} />
    </article>
  );
}

export function DevicesPanel({ sessionId }: { sessionId: string }) {
  const devices = useLoad(() => api.devices(sessionId), [sessionId], DEVICES_POLL_MS);
  const [filters, setFilters] = useState<Filter[]>([{ attribute: 'platform', operator: 'EQUALS', value: 'android' }]);
  const allocate = useAction();

  const submit = async (event: FormEvent) => {
    event.preventDefault();
    // An empty row is left out rather than refused: the version range button adds two rows at once.
    const body = { filters: filters.filter((f, i) => i === 0 || f.value.trim() !== '').map((f) => ({ ...f, value: f.value.trim() })) };
    if ((await allocate.run(() => api.allocateDevice(sessionId, body))) !== undefined) await devices.reload();
  };

  const all = devices.data?.data ?? [];
  const active = all.filter((d) => d.status !== 'released');
  const released = all.filter((d) => d.status === 'released');

  return (
    <div className="panel">
      <form className="card allocate" onSubmit={(e) => void submit(e)} aria-label="Allocate a phone">
        <DeviceFilters filters={filters} onChange={setFilters} />
        <button type="submit" className="primary" disabled={allocate.pending}>{allocate.pending ? <Spinner label="Allocating" /> : 'Allocate phone'}</button>
        <ErrorBanner error={allocate.error} onDismiss={() => allocate.setError(undefined)} />
      </form>
      <ErrorBanner error={devices.error} />
      {devices.loading && !devices.data && <Spinner label="Loading phones" />}
      {devices.data && active.length === 0 && <Empty>No phone in this session yet.</Empty>}
      <div className="device-grid">
        {active.map((d) => <DeviceCard key={d.id} sessionId={sessionId} device={d} onChange={() => void devices.reload()} />)}
      </div>
      {released.length > 0 && (
        <details>
          <summary>{released.length} released</summary>
          <ul>
            {released.map((d) => <li key={d.id}>{d.info.name} ({d.info.serial}) released {fmtTime(d.releasedAt)}{d.releaseReason && ` · ${d.releaseReason}`}</li>)}
          </ul>
        </details>
      )}
    </div>
  );
}
