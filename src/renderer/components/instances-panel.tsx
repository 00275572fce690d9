import { lazy, Suspense, useState } from 'react';
import type { Instance } from '../../shared/api/sessions.js';
import { api } from '../app-context.js';
import { Empty, ErrorBanner, fmtDuration, fmtTime, Spinner, Status, useAction, useLoad, useNow } from '../ui.js';

// xterm.js is most of the bundle's weight and only a terminal needs it: it loads when one is first opened.
const InstanceTerminal = lazy(() => import('./terminal.js').then((m) => ({ default: m.InstanceTerminal })));

const INSTANCES_POLL_MS = 1500;

function Elapsed({ instance }: { instance: Instance }) {
  const now = useNow();
  const start = Date.parse(instance.createdAt);
  if (instance.status === 'provisioning') return <span aria-label="Provisioning for">provisioning for {fmtDuration(now - start)}</span>;
  if (instance.readyAt) return <span>ready after {fmtDuration(Date.parse(instance.readyAt) - start)}</span>;
  return null;
}

function InstanceCard({ sessionId, instance, onChange }: { sessionId: string; instance: Instance; onChange(): void }) {
  const release = useAction();
  const [terminal, setTerminal] = useState(false);
  return (
    <article className="card instance" aria-label={`Instance ${instance.id.slice(0, 8)} ${instance.status}`}>
      <header className="card-header">
        <div>
          <h3>{instance.os} · <code>{instance.id.slice(0, 8)}</code></h3>
          <span className="muted">{instance.image} · {instance.machine.arch}, {instance.machine.cpuCores} cores, {Math.round(instance.machine.memoryMb / 1024)} GB</span>
        </div>
        <Status value={instance.status} />
      </header>
      <p className="muted">{instance.status === 'provisioning' && <Spinner label="Provisioning" />} <Elapsed instance={instance} /></p>
      {instance.statusMessage && <p className="error" role="alert">{instance.statusMessage}</p>}
      {instance.status === 'ready' && (
        <div role="tablist" aria-label="Instance views" className="tabs small">
          <button type="button" role="tab" aria-selected={!terminal} onClick={() => setTerminal(false)}>Details</button>
          <button type="button" role="tab" aria-selected={terminal} onClick={() => setTerminal(true)}>Terminal</button>
        </div>
      )}
      {instance.status === 'ready' && terminal && (
        <Suspense fallback={<Spinner label="Loading the terminal" />}>
          <InstanceTerminal sessionId={sessionId} instanceId={instance.id} />
        </Suspense>
      )}
      {instance.status === 'ready' && !terminal && (
        <dl className="facts">
          <dt>Allocated</dt><dd>{fmtTime(instance.createdAt)}</dd>
          <dt>Ready</dt><dd>{fmtTime(instance.readyAt)}</dd>
          <dt>Disk</dt><dd>{Math.round(instance.machine.diskMb / 1024)} GB</dd>
        </dl>
      )}
      {instance.status !== 'released' && instance.status !== 'failed' && (
        <footer className="button-row">
          <button type="button" className="danger" disabled={release.pending} onClick={() => void release.run(async () => {
            await api.releaseInstance(sessionId, instance.id);
            onChange();
          })}>
            Release instance
          </button>
        </footer>
      )}
      <ErrorBanner error={release.error} />
    </article>
  );
}

export function InstancesPanel({ sessionId }: { sessionId: string }) {
  const instances = useLoad(() => api.instances(sessionId), [sessionId], INSTANCES_POLL_MS);
  const allocate = useAction();
  const all = instances.data?.data ?? [];
  return (
    <div className="panel">
      <div className="button-row">
        <button type="button" className="primary" disabled={allocate.pending} onClick={() => void allocate.run(async () => {
          await api.allocateInstance(sessionId);
          await instances.reload();
        })}>
          {allocate.pending ? <Spinner label="Allocating" /> : 'Allocate macOS instance'}
        </button>
      </div>
      <ErrorBanner error={allocate.error ?? instances.error} onDismiss={() => allocate.setError(undefined)} />
      {instances.data && all.length === 0 && <Empty>No instance in this session yet.</Empty>}
      {all.map((i) => <InstanceCard key={i.id} sessionId={sessionId} instance={i} onChange={() => void instances.reload()} />)}
    </div>
  );
}
