import { useRef, useState } from 'react';
import { PHONE_FILE_ROOTS } from '../../shared/api/devices.js';
import { api } from '../app-context.js';
import { ErrorBanner, fmtBytes, fmtTime, Spinner, useAction, useLoad } from '../ui.js';
import { saveBlob } from './download.js';

const parentOf = (path: string) => path.slice(0, path.lastIndexOf('/')) || '/';

/**
 * The phone's shared storage and adb's scratch folder, as adb sync sees them: browse, download, and upload with a
 * Browse… button. An iPhone's app Documents (house_arrest) are not offered yet, and the tab says so.
 */
export function PhoneFiles({ sessionId, serial, name, platform }: { sessionId: string; serial: string; name: string; platform: string }) {
  if (platform === 'ios') {
    return <p className="muted">Browsing an iPhone's files is not available yet: an app's Documents are reached through house_arrest, which Benchtop does not offer so far.</p>;
  }
  return <AndroidFiles sessionId={sessionId} serial={serial} name={name} />;
}

function AndroidFiles({ sessionId, serial, name }: { sessionId: string; serial: string; name: string }) {
  const [path, setPath] = useState<string>(PHONE_FILE_ROOTS[0]);
  const listing = useLoad(() => api.phoneFiles(sessionId, serial, path), [sessionId, serial, path]);
  const action = useAction();
  const [done, setDone] = useState<string>();
  const picker = useRef<HTMLInputElement>(null);
  const atRoot = (PHONE_FILE_ROOTS as readonly string[]).includes(path);

  const upload = (files: FileList | null) => {
    const chosen = Array.from(files ?? []);
    if (chosen.length === 0) return;
    setDone(undefined);
    void action.run(async () => {
      for (const file of chosen) await api.putPhoneFile(sessionId, serial, `${path}/${file.name}`, file);
      await listing.reload();
      setDone(`Uploaded ${chosen.map((f) => f.name).join(', ')} to ${path}.`);
    });
    if (picker.current) picker.current.value = '';
  };

  return (
    <div className="stack phone-files">
      <div className="button-row">
        <label>
          Folder
          <select value={atRoot ? path : ''} onChange={(e) => e.target.value && setPath(e.target.value)} aria-label={`Folder on ${name}`}>
            {!atRoot && <option value="">{path}</option>}
            {PHONE_FILE_ROOTS.map((root) => <option key={root} value={root}>{root}</option>)}
          </select>
        </label>
        <button type="button" disabled={atRoot} onClick={() => setPath(parentOf(path))}>Up</button>
        <button type="button" onClick={() => picker.current?.click()} disabled={action.pending}>Upload files…</button>
        <input ref={picker} type="file" multiple hidden aria-label={`Files to upload to ${path}`} onChange={(e) => upload(e.target.files)} />
        {action.pending && <Spinner label="Transferring" />}
      </div>
      <p className="muted" aria-live="polite"><code>{path}</code>{done && <span role="status" className="ok"> · {done}</span>}</p>
      <ErrorBanner error={action.error ?? listing.error} onDismiss={() => action.setError(undefined)} />
      {listing.loading && !listing.data ? <Spinner label="Listing the folder" /> : (
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
                <td>
                  {entry.type === 'file' && (
                    <button type="button" aria-label={`Download ${entry.name}`} onClick={() => void action.run(async () => saveBlob(await api.phoneFile(sessionId, serial, entry.path), entry.name))}>
                      Download
                    </button>
                  )}
                </td>
              </tr>
            ))}
            {listing.data?.data.length === 0 && <tr><td colSpan={4} className="muted">This folder is empty.</td></tr>}
          </tbody>
        </table>
      )}
    </div>
  );
}
