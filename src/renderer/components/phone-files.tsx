import { useRef, useState } from 'react';
import { APP_DOCUMENTS_ROOT, PHONE_FILE_ROOTS } from '../../shared/api/devices.js';
import { API_PREFIX } from '../../shared/client/api-client.js';
import { api, authStore, uploadTransport } from '../app-context.js';
import { ErrorBanner, fmtBytes, fmtTime, Progress, Spinner, useAction, useLoad } from '../ui.js';
import { saveBlob } from './download.js';

const parentOf = (path: string) => path.slice(0, path.lastIndexOf('/')) || '/';

/**
 * Writes a file on the phone as api.putPhoneFile does, but by the Apps' upload transport (XMLHttpRequest), whose upload
 * events say how far it is: fetch has none, and a 50 MB file was a spinner for a minute.
 */
function putPhoneFile(sessionId: string, serial: string, path: string, file: File, app: string | undefined, onProgress: (fraction: number) => void): Promise<void> {
  const query = new URLSearchParams({ path, ...(app ? { app } : {}) });
  const organization = authStore.getState().organizationId;
  const headers = { 'content-type': 'application/octet-stream', ...(organization ? { 'x-organization-id': organization } : {}) };
  const url = `${API_PREFIX}/sessions/${encodeURIComponent(sessionId)}/devices/${encodeURIComponent(serial)}/files/content?${query}`;
  return uploadTransport.put(url, headers, file, onProgress);
}

/**
 * The phone's files: on Android its shared storage and adb's scratch folder, as adb sync sees them; on an iPhone an
 * app's Documents, as house_arrest opens them (only for apps that share them). Browse, download, delete (after a
 * second click), and upload with a Browse… button.
 */
export function PhoneFiles({ sessionId, serial, name, platform }: { sessionId: string; serial: string; name: string; platform: string }) {
  if (platform === 'ios') return <AppDocuments sessionId={sessionId} serial={serial} name={name} />;
  return <FileBrowser sessionId={sessionId} serial={serial} name={name} roots={PHONE_FILE_ROOTS} />;
}

/**
 * An iPhone lets a computer reach an app's files only when the app shares its Documents (UIFileSharingEnabled). The
 * picker lists every installed app, those that share first; choosing one that does not shows the phone's refusal.
 */
function AppDocuments({ sessionId, serial, name }: { sessionId: string; serial: string; name: string }) {
  const sharing = useLoad(() => api.phoneFileApps(sessionId, serial), [sessionId, serial]);
  const installed = useLoad(() => api.phoneApps(sessionId, serial), [sessionId, serial]);
  const [chosen, setChosen] = useState('');
  const shared = sharing.data?.data ?? [];
  const others = (installed.data?.data ?? []).filter((a) => !shared.some((s) => s.packageName === a.packageName));
  const app = chosen || shared[0]?.packageName || '';
  if (sharing.loading && !sharing.data) return <Spinner label="Listing the apps that share files" />;
  return (
    <div className="stack">
      <ErrorBanner error={sharing.error ?? installed.error} />
      {shared.length === 0 && (
        <p className="muted" role="note">
          No app on {name} shares its files. iOS lets a computer open an app's Documents only when the app's Info.plist sets
          UIFileSharingEnabled (the apps that show in Finder's Files tab).
        </p>
      )}
      <label>
        App
        <select value={app} onChange={(e) => setChosen(e.target.value)} aria-label={`App whose Documents to open on ${name}`}>
          {!app && <option value="">Choose an app</option>}
          {shared.length > 0 && (
            <optgroup label="Share their Documents">
              {shared.map((a) => <option key={a.packageName} value={a.packageName}>{a.name} ({a.packageName})</option>)}
            </optgroup>
          )}
          {others.length > 0 && (
            <optgroup label="Do not share their files">
              {others.map((a) => <option key={a.packageName} value={a.packageName}>{a.label ?? a.packageName} (does not share files)</option>)}
            </optgroup>
          )}
        </select>
      </label>
      {app && <FileBrowser key={app} sessionId={sessionId} serial={serial} name={name} roots={[APP_DOCUMENTS_ROOT]} app={app} />}
    </div>
  );
}

function FileBrowser({ sessionId, serial, name, roots, app }: { sessionId: string; serial: string; name: string; roots: readonly string[]; app?: string }) {
  const [path, setPath] = useState<string>(roots[0]!);
  const listing = useLoad(() => api.phoneFiles(sessionId, serial, path, app), [sessionId, serial, path, app]);
  const action = useAction();
  const [done, setDone] = useState<string>();
  const [confirm, setConfirm] = useState<string>();
  const [sending, setSending] = useState<{ name: string; progress: number }>();
  const picker = useRef<HTMLInputElement>(null);
  const atRoot = roots.includes(path);

  const remove = (entry: { name: string; path: string; type: string }) => {
    setConfirm(undefined);
    setDone(undefined);
    void action.run(async () => {
      await api.deletePhoneFile(sessionId, serial, entry.path, app);
      await listing.reload();
      setDone(`Deleted ${entry.name}${entry.type === 'directory' ? ' and what was in it' : ''}.`);
    });
  };

  const upload = (files: FileList | null) => {
    const chosen = Array.from(files ?? []);
    if (chosen.length === 0) return;
    setDone(undefined);
    void action.run(async () => {
      try {
        for (const file of chosen) {
          setSending({ name: file.name, progress: 0 });
          await putPhoneFile(sessionId, serial, `${path}/${file.name}`, file, app, (progress) => setSending({ name: file.name, progress }));
        }
      } finally {
        setSending(undefined);
      }
      await listing.reload();
      setDone(`Uploaded ${chosen.map((f) => f.name).join(', ')} to ${path}.`);
    });
    if (picker.current) picker.current.value = '';
  };

  return (
    <div className="stack phone-files">
      <div className="button-row">
        {roots.length > 1 && (
          <label>
            Folder
            <select value={atRoot ? path : ''} onChange={(e) => e.target.value && setPath(e.target.value)} aria-label={`Folder on ${name}`}>
              {!atRoot && <option value="">{path}</option>}
              {roots.map((root) => <option key={root} value={root}>{root}</option>)}
            </select>
          </label>
        )}
        <button type="button" disabled={atRoot} onClick={() => setPath(parentOf(path))}>Up</button>
        <button type="button" onClick={() => picker.current?.click()} disabled={action.pending || !!listing.error}>Upload files…</button>
        <input ref={picker} type="file" multiple hidden aria-label={`Files to upload to ${path}`} onChange={(e) => upload(e.target.files)} />
        {sending ? (
          <>
            <span className="muted">Uploading {sending.name}</span>
            <Progress label={`Uploading ${sending.name}`} value={sending.progress} />
          </>
        ) : action.pending && <Spinner label="Transferring" />}
      </div>
      <p className="muted" aria-live="polite"><code>{path}</code>{done && <span role="status" className="ok"> · {done}</span>}</p>
      <ErrorBanner error={action.error ?? listing.error} onDismiss={action.error ? () => action.setError(undefined) : undefined} />
      {listing.error ? null : listing.loading && !listing.data ? <Spinner label="Listing the folder" /> : (
        <table className="table compact" aria-label={`Files in ${path}`}>
          <thead><tr><th>Name</th><th>Size</th><th>Modified</th><th><span className="visually-hidden">Actions</span></th></tr></thead>
          <tbody>
            {(listing.data?.data ?? []).map((entry) => (
              <tr key={entry.path}>
                <td>
                  {entry.type === 'file' ? entry.name : (
                    <button type="button" className="link" onClick={() => setPath(entry.path)}>{entry.name}/</button>
                  )}
                </td>
                <td>{entry.type === 'file' ? fmtBytes(entry.size) : '—'}</td>
                <td>{fmtTime(entry.modifiedAt)}</td>
                <td><div className="button-row">
                  {entry.type === 'file' && (
                    <button type="button" aria-label={`Download ${entry.name}`} onClick={() => void action.run(async () => saveBlob(await api.phoneFile(sessionId, serial, entry.path, app), entry.name))}>
                      Download
                    </button>
                  )}
                  {confirm === entry.path ? (
                    <>
                      <button type="button" className="danger" onClick={() => remove(entry)}>Delete {entry.name}</button>
                      <button type="button" onClick={() => setConfirm(undefined)}>Cancel</button>
                    </>
                  ) : <button type="button" className="danger" aria-label={`Delete ${entry.name}…`} onClick={() => setConfirm(entry.path)}>Delete…</button>}
                </div></td>
              </tr>
            ))}
            {listing.data?.data.length === 0 && <tr><td colSpan={4} className="muted">This folder is empty.</td></tr>}
          </tbody>
        </table>
      )}
    </div>
  );
}
