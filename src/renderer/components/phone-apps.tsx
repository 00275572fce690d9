import { useRef, useState } from 'react';
import type { Device } from '../../shared/api/sessions.js';
import { api, useUploads } from '../app-context.js';
import { ErrorBanner, Progress, Spinner, useAction, useLoad } from '../ui.js';

/** The app file each platform installs. */
export const appExtension = (platform: string) => (platform === 'ios' ? '.ipa' : '.apk');

/** An app file dropped on the screen: uploaded (with the upload's own progress), then installed and opened. */
export interface InstallJob {
  id: number;
  filename: string;
  uploadKey?: string;
  phase: 'uploading' | 'installing' | 'installed' | 'failed';
  message?: string;
}


function StoredAppInstall({ sessionId, device }: { sessionId: string; device: Device }) {
  const files = useLoad(() => api.files({ limit: 100 }), []);
  const [fileId, setFileId] = useState('');
  const install = useAction();
  const [done, setDone] = useState<string>();
  const ready = (files.data?.data ?? []).filter((f) => f.status === 'ready' && (!f.platform || f.platform === device.info.platform));
  return (
    <form
      className="stack"
      aria-label="Install a stored app"
      onSubmit={(e) => {
        e.preventDefault();
        setDone(undefined);
        void install.run(() => api.install(sessionId, device.info.serial!, fileId, true)).then((r) => r && setDone(`Installed ${r.bundleId} and opened it.`));
      }}
    >
            <label>
        Stored app
        <select value={fileId} onChange={(e) => setFileId(e.target.value)} required>
          <option value="">{ready.length ? 'Choose a stored app' : `No ${device.info.platform} app stored yet`}</option>
          {ready.map((f) => <option key={f.id} value={f.id}>{f.filename}{f.bundleId ? ` (${f.bundleId})` : ''}</option>)}
        </select>
      </label>
      <div className="button-row">
        <button type="submit" disabled={!fileId || install.pending}>{install.pending ? <Spinner label="Installing" /> : 'Install and open'}</button>
        {done && <span role="status" className="ok">{done}</span>}
      </div>
      <ErrorBanner error={install.error ?? files.error} />
    </form>
  );
}

function InstallJobRow({ job, onDismiss }: { job: InstallJob; onDismiss(): void }) {
  const upload = useUploads((s) => s.uploads.find((u) => u.key === job.uploadKey));
  const label = job.phase === 'uploading'
    ? { hashing: 'Checking the file', uploading: 'Uploading', processing: 'Reading the app', ready: 'Uploaded', failed: 'Upload failed' }[upload?.phase ?? 'hashing']
    : { installing: 'Installing', installed: 'Installed', failed: 'Failed' }[job.phase];
  return (
    <li className="card install-job" aria-label={`Install of ${job.filename}`}>
      <div className="upload-head">
        <strong>{job.filename}</strong>
        <span className={`phase phase-${job.phase === 'installed' ? 'ready' : job.phase}`} role="status">{label}</span>
        {(job.phase === 'installed' || job.phase === 'failed') && (
          <button type="button" className="link" aria-label={`Dismiss the install of ${job.filename}`} onClick={onDismiss}>×</button>
        )}
      </div>
      {job.phase === 'uploading' && upload && (upload.phase === 'hashing' || upload.phase === 'uploading')
        ? <Progress label={`${label} ${job.filename}`} value={upload.progress} />
        : (job.phase === 'uploading' || job.phase === 'installing') && <Progress label={`${label} ${job.filename}`} />}
      {job.message && <p className={job.phase === 'failed' ? 'error' : 'muted'}>{job.message}</p>}
    </li>
  );
}


/**
 * The apps on the phone beside the ways to add one: a Browse… button and a drop on the screen (both uploaded, then
 * installed and opened), a stored app, and for each installed app launch, stop, clear data and uninstall.
 */
export function PhoneApps({ sessionId, device, jobs, onFiles, onDismiss }: {
  sessionId: string;
  device: Device;
  jobs: InstallJob[];
  onFiles(files: File[]): void;
  onDismiss(id: number): void;
}) {
  const serial = device.info.serial!;
  const platform = device.info.platform;
  const installed = jobs.filter((j) => j.phase === 'installed').length;
  const apps = useLoad(() => api.phoneApps(sessionId, serial), [sessionId, serial, installed]);
  const action = useAction();
  const [confirm, setConfirm] = useState<string>();
  const [done, setDone] = useState<string>();
  const picker = useRef<HTMLInputElement>(null);
  const run = (what: string, work: () => Promise<unknown>) => {
    setDone(undefined);
    void action.run(async () => {
      await work();
      setDone(what);
      await apps.reload();
    });
  };
  const act = (type: 'launchApp' | 'terminateApp' | 'clearAppData' | 'uninstallApp', packageName: string) => api.act(sessionId, serial, { type, packageName });
  return (
    <div className="stack phone-apps">
      <div className="button-row">
        <button type="button" className="primary" onClick={() => picker.current?.click()}>Browse… for an {appExtension(platform)}</button>
        <input ref={picker} type="file" accept={appExtension(platform)} multiple hidden aria-label={`App files to install on ${device.info.name}`} onChange={(e) => {
          onFiles(Array.from(e.target.files ?? []));
          e.target.value = '';
        }} />
        <span className="muted">or drop one on the screen.</span>
      </div>
      {jobs.length > 0 && (
        <ul className="uploads" aria-label="App installs">
          {jobs.slice(0, 3).map((j) => <InstallJobRow key={j.id} job={j} onDismiss={() => onDismiss(j.id)} />)}
        </ul>
      )}
      <h3 className="small-heading">Installed apps</h3>
      {done && <p role="status" className="ok">{done}</p>}
      <ErrorBanner error={action.error ?? apps.error} onDismiss={() => action.setError(undefined)} />
      {apps.loading && !apps.data ? <Spinner label="Listing the apps" /> : (
        <ul className="app-list" aria-label={`Apps on ${device.info.name}`}>
          {(apps.data?.data ?? []).map((app) => {
            const name = app.label ?? app.packageName;
            return (
              <li key={app.packageName} aria-label={name}>
                <div className="app-name">
                  <span><strong>{name}</strong>{app.version && <span className="muted"> {app.version}</span>}</span>
                  {app.label && <code className="muted">{app.packageName}</code>}
                </div>
                <div className="button-row">
                  <button type="button" onClick={() => run(`Opened ${name}.`, () => act('launchApp', app.packageName))}>Launch</button>
                  <button type="button" onClick={() => run(`Stopped ${name}.`, () => act('terminateApp', app.packageName))}>Stop</button>
                  {platform === 'android' && <button type="button" onClick={() => run(`Cleared the data of ${name}.`, () => act('clearAppData', app.packageName))}>Clear data</button>}
                  {confirm === app.packageName ? (
                    <>
                      <button type="button" className="danger" onClick={() => { setConfirm(undefined); run(`Uninstalled ${name}.`, () => act('uninstallApp', app.packageName)); }}>Uninstall {name}</button>
                      <button type="button" onClick={() => setConfirm(undefined)}>Cancel</button>
                    </>
                  ) : <button type="button" className="danger" onClick={() => setConfirm(app.packageName)}>Uninstall…</button>}
                </div>
              </li>
            );
          })}
          {apps.data?.data.length === 0 && <li className="muted">No app has been installed on this phone yet.</li>}
        </ul>
      )}
      <StoredAppInstall key={installed} sessionId={sessionId} device={device} />
    </div>
  );
}
