import { useState, type DragEvent } from 'react';
import type { App, StoredFile } from '../../shared/api/files.js';
import { api, uploadsStore, useUploads } from '../app-context.js';
import { fileFailureSentence, isAppFile, notAnAppMessage } from '../file-errors.js';
import { Empty, ErrorBanner, fmtBytes, fmtTime, Page, Progress, Status, useAction, useLoad } from '../ui.js';

const PHASE_LABELS = { hashing: 'Computing SHA-256', uploading: 'Uploading', processing: 'Processing', ready: 'Ready', failed: 'Failed' };

function Uploads() {
  const uploads = useUploads((s) => s.uploads);
  if (uploads.length === 0) return null;
  const finished = uploads.filter((u) => u.phase === 'ready' || u.phase === 'failed').length;
  return (
    <>
    {finished > 1 && <button type="button" onClick={() => uploadsStore.getState().clearFinished()}>Clear {finished} finished uploads</button>}
    <ul className="uploads" aria-label="Uploads">
      {uploads.map((u) => (
        <li key={u.key} className="card upload" aria-label={`Upload of ${u.filename}`}>
          <div className="upload-head">
            <strong>{u.filename}</strong> <span className="muted">{fmtBytes(u.size)}</span>
            <span className={`phase phase-${u.phase}`} role="status">{PHASE_LABELS[u.phase]}</span>
            {(u.phase === 'ready' || u.phase === 'failed') && <button type="button" className="link" aria-label={`Dismiss ${u.filename}`} onClick={() => uploadsStore.getState().dismiss(u.key)}>Dismiss</button>}
          </div>
          {(u.phase === 'hashing' || u.phase === 'uploading') && <Progress label={`${PHASE_LABELS[u.phase]} ${u.filename}`} value={u.progress} />}
          {u.phase === 'processing' && <Progress label={`Processing ${u.filename}`} />}
          {u.phase === 'ready' && u.file?.bundleId && <span className="muted">{u.file.bundleId}</span>}
          <ErrorBanner error={u.error} />
        </li>
      ))}
    </ul>
    </>
  );
}

function DeleteFile({ file, onDeleted }: { file: StoredFile; onDeleted(): void }) {
  const remove = useAction();
  return (
    <>
      <button
        type="button"
        className="link danger"
        aria-label={`Delete ${file.filename}`}
        disabled={remove.pending}
        onClick={() => {
          if (!window.confirm(`Delete ${file.filename}? Phones that already have it keep it installed.`)) return;
          void remove.run(() => api.deleteFile(file.id)).then(() => onDeleted());
        }}
      >
        Delete
      </button>
      {remove.error && <span role="alert" className="error inline">{remove.error}</span>}
    </>
  );
}

function AppGroup({ app }: { app: App }) {
  return (
    <article className="card app" aria-label={`App ${app.name}`}>
      <header className="card-header">
        <div><h3>{app.name}</h3><code>{app.bundleId}</code></div>
        <span className="chip">{app.platform}</span>
      </header>
      <p className="muted">Latest version {app.latestVersion ?? '—'} · {app.files.length} file{app.files.length === 1 ? '' : 's'} · updated {fmtTime(app.updatedAt)}</p>
      {app.files.length > 0 && (
        <ul aria-label={`Files of ${app.bundleId}`}>
          {app.files.map((f) => (
            <li key={f.id}>{f.version ?? 'no version'}{f.build && <span className="muted"> ({f.build})</span>} <span className="muted">· {fmtTime(f.createdAt)}</span></li>
          ))}
        </ul>
      )}
      {app.files[0] && <InstallOnPhone app={app} fileId={app.files[0].id} />}
    </article>
  );
}

/** Installs the app's newest file on a phone one of the organization's open sessions holds. */
function InstallOnPhone({ app, fileId }: { app: App; fileId: string }) {
  const [open, setOpen] = useState(false);
  const [target, setTarget] = useState('');
  const install = useAction();
  const [done, setDone] = useState<string>();
  const phones = useLoad(async () => {
    if (!open) return [];
    const sessions = await api.sessions({ limit: 100 });
    return sessions.data.filter((s) => !s.endedAt).flatMap((s) => s.devices
      .filter((d) => d.status === 'in_use' && d.info.serial && d.info.platform === app.platform)
      .map((d) => ({ key: `${s.id}|${d.info.serial}`, sessionId: s.id, serial: d.info.serial!, name: d.info.name })));
  }, [open]);
  if (!open) return <button type="button" onClick={() => setOpen(true)}>Install on a phone…</button>;
  const list = phones.data ?? [];
  return (
    <form className="inline-form" aria-label={`Install ${app.name} on a phone`} onSubmit={(e) => {
      e.preventDefault();
      const phone = list.find((p) => p.key === target);
      if (!phone) return;
      setDone(undefined);
      void install.run(() => api.install(phone.sessionId, phone.serial, fileId, true)).then((r) => r && setDone(`Installed ${app.name} on ${phone.name} and opened it.`));
    }}>
      <label>
        Phone
        <select value={target} required onChange={(e) => setTarget(e.target.value)}>
          <option value="">{phones.loading ? 'Looking for held phones…' : list.length ? 'Choose a phone you hold' : `No ${app.platform} phone is held in an open session`}</option>
          {list.map((p) => <option key={p.key} value={p.key}>{p.name} ({p.serial})</option>)}
        </select>
      </label>
      <button type="submit" className="primary" disabled={!target || install.pending}>Install</button>
      <button type="button" onClick={() => setOpen(false)}>Cancel</button>
      {done && <span role="status" className="ok">{done}</span>}
      <ErrorBanner error={install.error ?? phones.error} />
    </form>
  );
}

export function FilesScreen() {
  const files = useLoad(() => api.files({ limit: 100 }), [], 3000);
  const apps = useLoad(() => api.apps(), [], 3000);
  const [dragging, setDragging] = useState(false);
  const [refused, setRefused] = useState<string>();

  // Only apps are stored: anything else is refused here, with a sentence, before a byte is uploaded.
  const take = (list: FileList | null) => {
    const chosen = Array.from(list ?? []);
    const others = chosen.filter((f) => !isAppFile(f.name));
    setRefused(others.length === 0 ? undefined : others.map((f) => notAnAppMessage(f.name)).join(' '));
    for (const file of chosen.filter((f) => isAppFile(f.name))) {
      void uploadsStore.getState().upload(file).then(() => Promise.all([files.reload(), apps.reload()]));
    }
  };
  const reload = () => void Promise.all([files.reload(), apps.reload()]);
  const onDrop = (event: DragEvent) => {
    event.preventDefault();
    setDragging(false);
    take(event.dataTransfer.files);
  };

  return (
    <Page title="Files & Apps">
      <label
        className={`dropzone${dragging ? ' dragging' : ''}`}
        onDragOver={(e) => {
          e.preventDefault();
          setDragging(true);
        }}
        onDragLeave={() => setDragging(false)}
        onDrop={onDrop}
      >
        <span>Drop an .apk or .ipa here, or choose one</span>
        <input type="file" accept=".apk,.ipa" multiple aria-label="Choose app files to upload" onChange={(e) => take(e.target.files)} />
      </label>
      <ErrorBanner error={refused} onDismiss={() => setRefused(undefined)} />
      <Uploads />
      <h2>Apps</h2>
      <ErrorBanner error={apps.error} />
      {apps.data && apps.data.data.length === 0 && <Empty>No apps yet: an uploaded file becomes an app once it is processed.</Empty>}
      <div className="device-grid">{apps.data?.data.map((a) => <AppGroup key={a.id} app={a} />)}</div>
      <h2>Files</h2>
      <ErrorBanner error={files.error} />
      {files.data && files.data.data.length === 0 ? <Empty>No files.</Empty> : files.data && (
        <div className="table-wrap">
        <table className="table" aria-label="Files">
          <thead><tr><th>File</th><th>Size</th><th>Status</th><th>Bundle id</th><th>SHA-256</th><th>Expires</th><th><span className="visually-hidden">Actions</span></th></tr></thead>
          <tbody>
            {files.data.data.map((f) => (
              <tr key={f.id}>
                <td>{f.filename}</td>
                <td>{fmtBytes(f.size)}</td>
                <td><Status value={f.status} />{f.status === 'failed' && <span className="muted"> {fileFailureSentence(f.failureReason)}</span>}</td>
                <td>{f.bundleId ?? '—'}</td>
                <td><code title={f.sha256}>{f.sha256.slice(0, 12)}…</code></td>
                <td>{fmtTime(f.expiresAt)}</td>
                <td><DeleteFile file={f} onDeleted={reload} /></td>
              </tr>
            ))}
          </tbody>
        </table>
        </div>
      )}
    </Page>
  );
}
