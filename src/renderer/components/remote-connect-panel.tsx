import { useEffect, useState } from 'react';
import type { RemoteConnect } from '../../shared/api/remote-connect.js';
import { ApiError } from '../../shared/client/api-client.js';
import { api } from '../app-context.js';
import { ErrorBanner, fmtTime, useAction, useLoad } from '../ui.js';

/** Who is connected changes while the page is open: read again this often. */
const POLL_MS = 2000;

/**
 * "Use from your computer": opens the held phone to the user's own tools (adb, Android Studio, Gradle, Maestro;
 * libimobiledevice and Appium on an iPhone), shows the one command to copy and who is connected, and, on Android,
 * the user's adb keys, added by pasting ~/.android/adbkey.pub.
 */
export function RemoteConnectPanel({ sessionId, serial, platform }: { sessionId: string; serial: string; platform: 'android' | 'ios' }) {
  // Nothing is asked until the user opens it (POST answers an open one as it is, so opening from elsewhere first is
  // fine); then who is connected is read every few seconds until it closes.
  const [current, setCurrent] = useState<RemoteConnect | null>(null);
  useEffect(() => {
    if (!current) return;
    const timer = setInterval(() => {
      api.remoteConnect(sessionId, serial).then(setCurrent, (e: Error) => {
        if (e instanceof ApiError && (e.status === 404 || e.status === 409)) setCurrent(null);
      });
    }, POLL_MS);
    return () => clearInterval(timer);
  }, [current !== null, sessionId, serial]);
  const keys = useLoad(() => (platform === 'android' ? api.adbKeys() : Promise.resolve(undefined)), [platform]);
  const action = useAction();
  const [pasted, setPasted] = useState('');
  const [copied, setCopied] = useState<string>();

  const copy = async (text: string) => {
    await navigator.clipboard.writeText(text).catch(() => undefined);
    setCopied(text);
  };
  const open = () => void action.run(async () => {
    await api.openRemoteConnect(sessionId, serial);
    setCurrent(await api.remoteConnect(sessionId, serial));
  });
  const close = () => void action.run(async () => {
    await api.closeRemoteConnect(sessionId, serial);
    setCurrent(null);
  });
  const addKey = () => void action.run(async () => {
    await api.addAdbKey(pasted.trim());
    setPasted('');
    await keys.reload();
  });
  const deleteKey = (id: string) => void action.run(async () => {
    await api.deleteAdbKey(id);
    await keys.reload();
  });

  const noKey = platform === 'android' && keys.data?.data.length === 0;
  // Until the keys are read it is not known whether adb could sign in, so the button waits for them too.
  const keysUnread = platform === 'android' && keys.data === undefined;
  return (
    <section className="remote-connect card" aria-label="Use from your computer">
      <h3>Use from your computer</h3>
      {current ? (
        <>
          <p className="muted">
            {platform === 'android'
              ? 'Run this where your adb runs (Android Studio, Gradle and Maestro use it too):'
              : 'Run this in the shell where libimobiledevice, go-ios or Appium runs:'}
          </p>
          <CommandLine text={current.command} copied={copied === current.command} onCopy={copy} />
          {current.webDriverAgentUrl && (
            <>
              <p className="muted">Appium's <code>appium:webDriverAgentUrl</code>:</p>
              <CommandLine text={current.webDriverAgentUrl} copied={copied === current.webDriverAgentUrl} onCopy={copy} />
            </>
          )}
          {current.lanCommand && (
            <>
              <p className="muted">From another computer on the LAN (needs only Node):</p>
              <CommandLine text={current.lanCommand} copied={copied === current.lanCommand} onCopy={copy} />
            </>
          )}
          <h4>Connected</h4>
          {(current.connections ?? []).length === 0 ? (
            <p className="muted">Nobody yet.</p>
          ) : (
            <ul aria-label="Connected tools">
              {current.connections!.map((c) => (
                <li key={`${c.peer}-${c.since}`}>
                  {c.peer}{c.fingerprint ? ` · key ${c.fingerprint}` : ''} · since {fmtTime(c.since)}
                </li>
              ))}
            </ul>
          )}
          <button type="button" className="danger" disabled={action.pending} onClick={close}>Stop sharing</button>
        </>
      ) : (
        <>
          <p className="muted">
            {platform === 'android'
              ? 'Let your own adb reach this phone until you release it. Your adb signs in with one of your keys below.'
              : 'A usbmuxd that shows only this iPhone, for your own tools, until you release it.'}
          </p>
          <button type="button" className="primary" disabled={action.pending || noKey || keysUnread} onClick={open}>
            {platform === 'android' ? 'Open for adb connect' : 'Open a private usbmuxd'}
          </button>
        </>
      )}
      {platform === 'android' && (
        <>
          <h4>Your adb keys</h4>
          {noKey && <p className="muted">Add your key first: paste the contents of <code>~/.android/adbkey.pub</code>.</p>}
          <ul aria-label="Your adb keys">
            {(keys.data?.data ?? []).map((k) => (
              <li key={k.id}>
                {k.title} <span className="muted">{k.fingerprint}</span>{' '}
                <button type="button" className="link danger" onClick={() => deleteKey(k.id)} aria-label={`Delete adb key ${k.title}`}>Delete</button>
              </li>
            ))}
          </ul>
          <label>
            adbkey.pub
            <textarea value={pasted} onChange={(e) => setPasted(e.target.value)} rows={2} placeholder="QAAAA… you@laptop" aria-label="Paste adbkey.pub" />
          </label>
          <button type="button" disabled={action.pending || pasted.trim() === ''} onClick={addKey}>Add key</button>
        </>
      )}
      <ErrorBanner error={action.error ?? keys.error} onDismiss={() => { action.setError(undefined); keys.setError(undefined); }} />
    </section>
  );
}

function CommandLine({ text, copied, onCopy }: { text: string; copied: boolean; onCopy: (text: string) => Promise<void> }) {
  return (
    <div className="command-line">
      <code>{text}</code>
      <button type="button" onClick={() => void onCopy(text)} aria-label={`Copy ${text}`}>{copied ? 'Copied' : 'Copy'}</button>
    </div>
  );
}
