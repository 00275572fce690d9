import { useState, type DragEvent } from 'react';
import type { App } from '../../shared/api/files.js';
import { api, uploadsStore, useUploads } from '../app-context.js';
import { Empty, ErrorBanner, fmtBytes, fmtTime, Page, Progress, Status, useLoad } from '../ui.js';

const PHASE_LABELS = { hashing: 'Computing SHA-256', uploading: 'Uploading', processing: 'Processing', ready: 'Ready', failed: 'Failed' };

function Uploads() {
  const uploads = useUploads((s) => s.uploads);
  if (uploads.length === 0) return null;
  return (
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
  );
}

function AppGroup({ app }: { app: App }) {
  return (
    <article className="card app" aria-label={`App ${app.bundleId}`}>
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
    </article>
  );
}

export function FilesScreen() {
  const files = useLoad(() => api.files({ limit: 100 }), [], 3000);
  const apps = useLoad(() => api.apps(), [], 3000);
  const [dragging, setDragging] = useState(false);

  const take = (list: FileList | null) => {
    for (const file of Array.from(list ?? [])) {
      void uploadsStore.getState().upload(file).then(() => Promise.all([files.reload(), apps.reload()]));
    }
  };
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
      <Uploads />
      <h2>Apps</h2>
      <ErrorBanner error={apps.error} />
      {apps.data && apps.data.data.length === 0 && <Empty>No apps yet: an uploaded file becomes an app once it is processed.</Empty>}
      <div className="device-grid">{apps.data?.data.map((a) => <AppGroup key={a.id} app={a} />)}</div>
      <h2>Files</h2>
      <ErrorBanner error={files.error} />
      {files.data && files.data.data.length === 0 ? <Empty>No files.</Empty> : files.data && (
        <table className="table" aria-label="Files">
          <thead><tr><th>File</th><th>Size</th><th>Status</th><th>Bundle id</th><th>SHA-256</th><th>Expires</th></tr></thead>
          <tbody>
            {files.data.data.map((f) => (
              <tr key={f.id}>
                <td>{f.filename}</td>
                <td>{fmtBytes(f.size)}</td>
                <td><Status value={f.status} />{f.failureReason && <span className="muted"> {f.failureReason}</span>}</td>
                <td>{f.bundleId ?? '—'}</td>
                <td><code title={f.sha256}>{f.sha256.slice(0, 12)}…</code></td>
                <td>{fmtTime(f.expiresAt)}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </Page>
  );
}
