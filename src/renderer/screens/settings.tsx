import { useEffect, useRef, useState, type FormEvent } from 'react';
import type { CreateMacHostBody, MacHost } from '../../shared/api/mac-hosts.js';
import type { AssistantProvider } from '../../shared/api/chats.js';
import type { LabSettings, WebDriverVideo } from '../../shared/api/account.js';
import type { ApiError } from '../../shared/client/api-client.js';
import { DEFAULT_PLANS } from '../../shared/plans.js';
import { api, useAuth } from '../app-context.js';
import { CERTIFICATE_FILE, CERTIFICATE_PATH } from '../components/api-key-usage.js';
import { ProvidersSection } from '../components/providers-section.js';
import { Empty, ErrorBanner, fmtBytes, fmtTime, Page, Spinner, Status, useAction, useLoad } from '../ui.js';

function LabSection() {
  const settings = useLoad(() => api.labSettings(), []);
  const save = useAction();
  const [adbHost, setAdbHost] = useState('');
  const [adbPort, setAdbPort] = useState('');
  const [devices, setDevices] = useState('');
  const [instances, setInstances] = useState('');
  const [askSignup, setAskSignup] = useState(false);
  // The question's buttons go away once answered: focus moves to what it did (or back to the switch), not to the page.
  const [shared, setShared] = useState<string>();
  const sharedNote = useRef<HTMLParagraphElement>(null);
  const lanSwitch = useRef<HTMLInputElement>(null);
  useEffect(() => {
    if (shared) sharedNote.current?.focus();
  }, [shared]);
  const s = settings.data;
  useEffect(() => {
    if (!s) return;
    setAdbHost(s.adb.host);
    setAdbPort(String(s.adb.port));
    setDevices(String(s.quotas.devices));
    setInstances(String(s.quotas.instances));
  }, [s]);
  const patch = (body: Parameters<typeof api.updateLabSettings>[0]) => void save.run(async () => {
    await api.updateLabSettings(body);
    await settings.reload();
  });
  const share = (keepSignupOpen: boolean) => {
    setAskSignup(false);
    setShared(undefined);
    void save.run(async () => {
      await api.updateLabSettings(keepSignupOpen ? { lanSharing: true } : { lanSharing: true, signupOpen: false });
      await settings.reload();
      setShared(keepSignupOpen ? 'Shared on the LAN; sign-up stays open.' : 'Shared on the LAN; sign-up is by invitation only.');
      return true;
    }).then((done) => {
      // Refused: back to the switch, once it is enabled again, beside the error.
      if (!done) setTimeout(() => lanSwitch.current?.focus());
    });
  };
  if (!s) return settings.loading ? <Spinner label="Loading lab settings" /> : <ErrorBanner error={settings.error} />;
  return (
    <>
      {s.secretStore === 'file' && (
        <div className="warning" role="alert">
          No OS keychain (Secret Service) is running: Mac host credentials and the assistant's API key are kept in a file readable only by you (0600) in the data directory.
        </div>
      )}
      <ErrorBanner error={save.error} onDismiss={() => save.setError(undefined)} />
      <section aria-labelledby="lan-title" className="card">
        <h2 id="lan-title">LAN sharing</h2>
        <label className="toggle">
          <input ref={lanSwitch} type="checkbox" checked={s.lanSharing.enabled || askSignup} disabled={save.pending || askSignup} onChange={(e) => {
            setShared(undefined);
            // Sharing with sign-up open lets anyone on the LAN make an account: ask first.
            if (e.target.checked && s.signupOpen) setAskSignup(true);
            else patch({ lanSharing: e.target.checked });
          }} />
          Share this lab on the LAN over HTTPS (port {s.lanSharing.port}); localhost stays as it is
        </label>
        {askSignup && (
          <div className="warning" role="group" aria-label="Sign-up on the LAN">
            <p>Sign-up is open: anyone who reaches this lab on the LAN could create an account. Keep it open, or let people in by invitation only?</p>
            <div className="button-row">
              <button type="button" className="primary" onClick={() => share(false)}>Share, invitations only</button>
              <button type="button" onClick={() => share(true)}>Share, keep sign-up open</button>
              <button type="button" onClick={() => {
                setAskSignup(false);
                // The switch is enabled again only once drawn without the question.
                setTimeout(() => lanSwitch.current?.focus());
              }}>Cancel</button>
            </div>
          </div>
        )}
        {shared && <p ref={sharedNote} className="ok" role="status" tabIndex={-1}>{shared}</p>}
        {s.lanSharing.enabled && (
          <dl className="facts">
            <dt>Teammates open</dt><dd>{s.lanSharing.urls.map((u) => <div key={u}><code>{u}</code></div>)}</dd>
            <dt>Certificate SHA-256</dt>
            <dd>
              <code className="wrap">{s.lanSharing.certificateSha256 ?? '—'}</code>
              {s.lanSharing.certificateSha256 && <div><a href={CERTIFICATE_PATH} download={CERTIFICATE_FILE}>Download the certificate</a> for teammates&apos; clients to trust</div>}
            </dd>
          </dl>
        )}
        <label className="toggle">
          <input type="checkbox" checked={s.signupOpen} disabled={save.pending} onChange={(e) => patch({ signupOpen: e.target.checked })} />
          Anyone who reaches the lab may create an account
        </label>
      </section>
      <section aria-labelledby="remote-lan-title" className="card">
        <h2 id="remote-lan-title">Remote connect on the LAN</h2>
        <label className="toggle">
          <input type="checkbox" checked={s.remoteConnectOnLan.enabled} disabled={save.pending || (!s.remoteConnectOnLan.enabled && !s.remoteConnectOnLan.host)}
            onChange={(e) => patch({ remoteConnectOnLan: e.target.checked })} />
          Teammates <code>adb connect</code> straight to {s.remoteConnectOnLan.host ?? 'this machine'} (plain adb, not inside HTTPS)
        </label>
        <p className={s.remoteConnectOnLan.enabled ? 'warning' : 'muted'} role={s.remoteConnectOnLan.enabled ? 'alert' : undefined}>
          Anyone on the LAN can reach these ports. The adb key still guards Android phones, but an iPhone&apos;s usbmuxd and WebDriverAgent ports have no key:
          whoever reaches them uses the phone. Off, remote connections listen on localhost only, and over LAN sharing they travel inside HTTPS.
          Switching either way closes the remote connections that are open; their holders open them again.
        </p>
        {!s.remoteConnectOnLan.host && <p className="muted">This machine has no LAN address.</p>}
      </section>
      <section aria-labelledby="adb-title" className="card">
        <h2 id="adb-title">Android (adb server)</h2>
        <form className="inline-form" onSubmit={(e: FormEvent) => {
          e.preventDefault();
          patch({ adb: { host: adbHost.trim(), port: Number(adbPort) } });
        }}>
          <label>Host <input value={adbHost} required onChange={(e) => setAdbHost(e.target.value)} /></label>
          <label>Port <input type="number" min={1} max={65535} required value={adbPort} onChange={(e) => setAdbPort(e.target.value)} /></label>
          <button type="submit">Save adb address</button>
          {!s.adb.enabled && <span className="muted">The Android fleet is switched off (BENCHTOP_ADB=off).</span>}
        </form>
      </section>
      <section aria-labelledby="quota-title" className="card">
        <h2 id="quota-title">Quotas</h2>
        <form className="inline-form" onSubmit={(e: FormEvent) => {
          e.preventDefault();
          patch({ quotas: { devices: Number(devices), instances: Number(instances) } });
        }}>
          <label>Phones per organization <input type="number" min={0} max={10000} required value={devices} onChange={(e) => setDevices(e.target.value)} /></label>
          <label>Instances per organization <input type="number" min={0} max={10000} required value={instances} onChange={(e) => setInstances(e.target.value)} /></label>
          <button type="submit">Save quotas</button>
        </form>
      </section>
      <SharingSection settings={s} onSaved={() => void settings.reload()} />
      <TestResultFilesSection settings={s} onSaved={() => void settings.reload()} />
    </>
  );
}

/**
 * How long the lab keeps test results' files (a WebDriver run's video and logs, a reporter's traces), beside what they
 * take and what the disk has left: a lab on a desk fills its disk with runs' videos unless someone chooses.
 */
/** The lab's choice for the video of WebDriver runs that do not say, in words. */
const VIDEO_CHOICES: Record<WebDriverVideo, string> = {
  on: 'Every run keeps its video',
  'retain-on-failure': 'Only a run that does not pass keeps its video',
  off: 'No run is recorded',
};

/** Under this much free space the section warns: a few hours of runs' videos. */
const LOW_DISK_BYTES = 2 * 1024 ** 3;

function TestResultFilesSection({ settings, onSaved }: { settings: LabSettings; onSaved(): void }) {
  const files = settings.testResultFiles;
  const [days, setDays] = useState(String(files.keepDays));
  const [video, setVideo] = useState(settings.webDriverVideo);
  const [answer, setAnswer] = useState<{ ok: boolean; text: string }>();
  const [pending, setPending] = useState(false);
  const submit = async (event: FormEvent) => {
    event.preventDefault();
    setPending(true);
    setAnswer(undefined);
    try {
      await api.updateLabSettings({ testResultFiles: { keepDays: Number(days) }, webDriverVideo: video });
      setAnswer({ ok: true, text: `Saved: ${Number(days) === 0 ? 'the files are kept' : `files older than ${days} days are removed, from now on as they age`}; ${VIDEO_CHOICES[video].toLowerCase()}.` });
      onSaved();
    } catch (e) {
      setAnswer({ ok: false, text: (e as ApiError).message });
    } finally {
      setPending(false);
    }
  };
  return (
    <section aria-labelledby="test-result-files-title" className="card">
      <h2 id="test-result-files-title">Test results' files</h2>
      <p>
        They take {fmtBytes(files.storedBytes)}
        {files.diskFreeBytes !== null && <>; the disk has {fmtBytes(files.diskFreeBytes)} free</>}.
      </p>
      {files.diskFreeBytes !== null && files.diskFreeBytes < LOW_DISK_BYTES && (
        <div className="warning" role="alert">
          The lab's disk has under {fmtBytes(LOW_DISK_BYTES)} free: once it is full, runs' videos and logs, and uploads, can no longer be stored. Keep files for fewer days, or free space on it.
        </div>
      )}
      <form className="inline-form" onSubmit={(e) => void submit(e)} onInput={() => setAnswer(undefined)}>
        <label>Keep each file for (days, 0: always)
          <input type="number" min={0} max={3650} step={1} required value={days} onChange={(e) => setDays(e.target.value)} />
        </label>
        <label>WebDriver runs' videos
          <select value={video} onChange={(e) => setVideo(e.target.value as WebDriverVideo)}>
            {(Object.keys(VIDEO_CHOICES) as WebDriverVideo[]).map((choice) => <option key={choice} value={choice}>{VIDEO_CHOICES[choice]}</option>)}
          </select>
        </label>
        <div className="form-answer">
          <button type="submit" disabled={pending}>Save</button>
          {answer && <span role={answer.ok ? 'status' : 'alert'} className={answer.ok ? 'ok' : 'error inline'}>{answer.text}</span>}
        </div>
      </form>
      <p className="muted">
        A WebDriver run's video and logs, and a reporter's traces and screenshots, of every organization. The results themselves stay, saying when their files went.
        The video choice is for runs that do not say: a run's own <code>benchtop:options.video</code> wins.
      </p>
    </section>
  );
}

/** Minutes as the form shows them: at most two decimals ("0.5", "15"). */
const minutes = (seconds: number) => String(Number((seconds / 60).toFixed(2)));

/**
 * The idle time and the longest reservation, in the form's units: minutes and hours. What the lab would refuse is
 * refused in the field, and the lab's own answer (a refusal or "Saved.") shows beside the Save button.
 */
function SharingSection({ settings, onSaved }: { settings: LabSettings; onSaved(): void }) {
  const [idleMinutes, setIdleMinutes] = useState(minutes(settings.deviceIdleSeconds));
  const [reservationHours, setReservationHours] = useState(String(settings.reservationMaxHours));
  const [answer, setAnswer] = useState<{ ok: boolean; text: string }>();
  const [pending, setPending] = useState(false);
  const least = settings.deviceIdleMinSeconds;
  const idleRule = `0 (never) or at least ${minutes(least)} minute${least === 60 ? '' : 's'}${least % 60 ? ` (${least} seconds)` : ''}`;
  const checkIdle = (field: HTMLInputElement) => {
    const value = Number(field.value);
    field.setCustomValidity(field.value !== '' && value !== 0 && value * 60 < least ? `The idle time is ${idleRule}.` : '');
  };
  const submit = async (event: FormEvent) => {
    event.preventDefault();
    setPending(true);
    setAnswer(undefined);
    try {
      await api.updateLabSettings({ deviceIdleSeconds: Math.round(Number(idleMinutes) * 60), reservationMaxHours: Number(reservationHours) });
      setAnswer({ ok: true, text: `Saved: ${Number(idleMinutes) === 0 ? 'no idle release' : `idle phones go back after ${idleMinutes} min`}, reservations of up to ${reservationHours} h.` });
      onSaved();
    } catch (e) {
      // The lab speaks in seconds (deviceIdleSeconds); the form in minutes.
      const error = e as ApiError;
      setAnswer({ ok: false, text: error.code === 'idle_too_short' ? `The lab refused: the idle time is ${idleRule}.` : error.message });
    } finally {
      setPending(false);
    }
  };
  return (
    <section aria-labelledby="sharing-title" className="card">
      <h2 id="sharing-title">Sharing the phones</h2>
      <form className="inline-form" onSubmit={(e) => void submit(e)} onInput={() => setAnswer(undefined)}>
        <label>Release an idle phone after (minutes, 0: never)
          <input
            aria-describedby="idle-rule"
            type="number"
            min={0}
            max={7 * 24 * 60}
            step="any"
            required
            value={idleMinutes}
            onChange={(e) => { checkIdle(e.target); setIdleMinutes(e.target.value); }}
            onInvalid={(e) => checkIdle(e.currentTarget)}
          />
        </label>
        <label>Longest reservation (hours)
          <input type="number" min={1} max={24 * 31} step={1} required value={reservationHours} onChange={(e) => setReservationHours(e.target.value)} />
        </label>
        {/* The answer wraps beside the button, never under the form, where it would go unseen. */}
        <div className="form-answer">
          <button type="submit" disabled={pending}>Save sharing</button>
          {answer && <span role={answer.ok ? 'status' : 'alert'} className={answer.ok ? 'ok' : 'error inline'}>{answer.text}</span>}
        </div>
      </form>
      <p className="muted">
        <span id="idle-rule">The idle time is {idleRule}.</span>{' '}
        A held phone with no action, screenshot, install, logs or live screen for that long goes back to the pool (its holder is warned first).
        A reservation books a phone for at most the longest reservation.
      </p>
    </section>
  );
}

function PlanSection() {
  const balance = useLoad(() => api.balance(), []);
  const act = useAction();
  return (
    <section aria-labelledby="plan-title" className="card">
      <h2 id="plan-title">Plan of the current organization</h2>
      <ErrorBanner error={act.error ?? balance.error} />
      {balance.data && (
        <label>
          Plan
          <select value={balance.data.plan} onChange={(e) => void act.run(async () => {
            await api.setPlan(e.target.value);
            await balance.reload();
          })}>
            {Object.entries(DEFAULT_PLANS).map(([name, p]) => (
              <option key={name} value={name}>{name}: {p.devices / 3600} phone hours, {p.instances / 3600} instance hours</option>
            ))}
          </select>
        </label>
      )}
    </section>
  );
}

function AssistantSection() {
  const current = useLoad(() => api.assistant(), []);
  const act = useAction();
  const [provider, setProvider] = useState<AssistantProvider>('offline');
  const [endpoint, setEndpoint] = useState('');
  const [model, setModel] = useState('');
  const [apiKey, setApiKey] = useState('');
  const [saved, setSaved] = useState(false);
  useEffect(() => {
    if (!current.data) return;
    setProvider(current.data.provider);
    setEndpoint(current.data.endpoint ?? '');
    setModel(current.data.model ?? '');
  }, [current.data]);
  const submit = async (event: FormEvent) => {
    event.preventDefault();
    setSaved(false);
    const done = await act.run(() => api.setAssistant(provider === 'offline'
      ? { provider }
      : { provider, endpoint: endpoint.trim() || null, model: model.trim() || null, ...(apiKey ? { apiKey } : {}) }));
    if (done) {
      setApiKey('');
      setSaved(true);
      await current.reload();
    }
  };
  return (
    <section aria-labelledby="assistant-title" className="card">
      <h2 id="assistant-title">Assistant provider</h2>
      <ErrorBanner error={act.error ?? current.error} />
      <form className="stack" onSubmit={(e) => void submit(e)}>
        <label>Provider
          <select value={provider} onChange={(e) => setProvider(e.target.value as AssistantProvider)}>
            <option value="offline">Offline (no model)</option>
            <option value="openai">OpenAI-compatible (OpenAI, Ollama, LM Studio, llama.cpp)</option>
            <option value="anthropic">Anthropic</option>
          </select>
        </label>
        {provider === 'offline' ? (
          <p className="muted">The built-in interpreter runs direct commands such as “tap Settings”, “type hello” or “swipe up”, with no model.</p>
        ) : (
          <>
            <label>Endpoint <input value={endpoint} onChange={(e) => setEndpoint(e.target.value)} placeholder={provider === 'openai' ? 'https://api.openai.com/v1 (default), or e.g. http://127.0.0.1:11434/v1' : 'https://api.anthropic.com (default)'} /></label>
            <label>Model <input required value={model} onChange={(e) => setModel(e.target.value)} placeholder={provider === 'openai' ? 'e.g. llama3.1 or gpt-4o' : 'e.g. claude-sonnet-4-5'} /></label>
            <label>API key <input type="password" autoComplete="off" value={apiKey} onChange={(e) => setApiKey(e.target.value)} placeholder={current.data?.hasApiKey ? 'stored; type to replace' : 'none stored'} /></label>
          </>
        )}
        <div className="button-row"><button type="submit">Save assistant</button>{saved && <span role="status" className="ok">Saved.</span>}</div>
      </form>
    </section>
  );
}

const EMPTY_HOST = { name: '', address: '', port: '22', username: '', privateKey: '', password: '', mode: 'tart', baseImage: 'ghcr.io/cirruslabs/macos-sequoia-base:latest', maxInstances: '2' };

function MacHostForm({ host, onDone }: { host?: MacHost; onDone(): void }) {
  const [f, setF] = useState(host ? { ...EMPTY_HOST, name: host.name, address: host.address, port: String(host.port), username: host.username, mode: host.mode, baseImage: host.baseImage, maxInstances: String(host.maxInstances) } : EMPTY_HOST);
  const act = useAction();
  const set = (k: keyof typeof EMPTY_HOST) => (e: { target: { value: string } }) => setF({ ...f, [k]: e.target.value });
  const submit = async (event: FormEvent) => {
    event.preventDefault();
    const body: CreateMacHostBody = {
      name: f.name.trim(),
      address: f.address.trim(),
      port: Number(f.port),
      username: f.username.trim(),
      mode: f.mode as CreateMacHostBody['mode'],
      baseImage: f.baseImage.trim(),
      ...(f.mode === 'tart' ? { maxInstances: Number(f.maxInstances) } : {}),
      ...(f.privateKey ? { privateKey: f.privateKey } : {}),
      ...(f.password ? { password: f.password } : {}),
    };
    const done = await act.run(() => (host ? api.updateLabHost(host.id, body) : api.addLabHost(body)));
    if (done) onDone();
  };
  return (
    <form className="card stack" onSubmit={(e) => void submit(e)} aria-label={host ? `Edit ${host.name}` : 'Add a Mac host'}>
      <div className="grid-2">
        <label>Name <input required value={f.name} onChange={set('name')} /></label>
        <label>Address <input required value={f.address} onChange={set('address')} placeholder="mac-mini.local" /></label>
        <label>SSH port <input type="number" min={1} max={65535} value={f.port} onChange={set('port')} /></label>
        <label>User <input required value={f.username} onChange={set('username')} /></label>
        <label>Mode
          <select value={f.mode} onChange={set('mode')}><option value="tart">tart (VMs)</option><option value="bare">bare (the Mac itself)</option></select>
        </label>
        <label>{f.mode === 'tart' ? 'Base image' : 'System description'} <input required value={f.baseImage} onChange={set('baseImage')} /></label>
        {f.mode === 'tart' && <label>Instances at once <input type="number" min={1} max={16} value={f.maxInstances} onChange={set('maxInstances')} /></label>}
        <label>Password <input type="password" autoComplete="off" value={f.password} onChange={set('password')} placeholder={host ? 'unchanged' : ''} /></label>
      </div>
      <label>Private key <textarea rows={3} value={f.privateKey} onChange={set('privateKey')} placeholder={host ? 'unchanged' : '-----BEGIN OPENSSH PRIVATE KEY-----'} /></label>
      <ErrorBanner error={act.error} />
      <div className="button-row">
        <button type="submit" className="primary" disabled={act.pending}>{act.pending ? <Spinner label="Checking the host" /> : host ? 'Save host' : 'Add host'}</button>
        <button type="button" onClick={onDone}>Cancel</button>
      </div>
    </form>
  );
}

function MacHostsSection() {
  const hosts = useLoad(() => api.labHosts(), [], 5000);
  const [editing, setEditing] = useState<MacHost | 'new'>();
  const act = useAction();
  const done = () => {
    setEditing(undefined);
    void hosts.reload();
  };
  return (
    <section aria-labelledby="hosts-title" className="card">
      <h2 id="hosts-title">Mac hosts</h2>
      <ErrorBanner error={act.error ?? hosts.error} />
      {hosts.data?.data.length === 0 && <Empty>No Mac hosts: add a Mac reachable over SSH to run macOS instances.</Empty>}
      {hosts.data && hosts.data.data.length > 0 && (
        <table className="table" aria-label="Mac hosts">
          <thead><tr><th>Name</th><th>Address</th><th>Mode</th><th>Health</th><th>Checked</th><th><span className="visually-hidden">Actions</span></th></tr></thead>
          <tbody>
            {hosts.data.data.map((h) => (
              <tr key={h.id}>
                <td>{h.name}</td>
                <td><code>{h.username}@{h.address}:{h.port}</code></td>
                <td>{h.mode}</td>
                <td><Status value={h.health} />{h.healthMessage && <span className="muted"> {h.healthMessage}</span>}</td>
                <td>{fmtTime(h.checkedAt)}</td>
                <td className="button-row">
                  <button type="button" aria-label={`Edit ${h.name}`} onClick={() => setEditing(h)}>Edit</button>
                  <button type="button" className="danger" aria-label={`Remove ${h.name}`} onClick={() => void act.run(async () => {
                    await api.deleteLabHost(h.id);
                    await hosts.reload();
                  })}>Remove</button>
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      {editing ? <MacHostForm key={editing === 'new' ? 'new' : editing.id} host={editing === 'new' ? undefined : editing} onDone={done} /> : (
        <button type="button" onClick={() => setEditing('new')}>Add a Mac host</button>
      )}
    </section>
  );
}

/** Lab administration: only the lab owner reaches it. */
export function SettingsScreen() {
  const owner = useAuth((s) => s.user?.labOwner);
  if (owner === undefined) return <Spinner label="Loading" />;
  if (!owner) return <Page title="Settings"><p>Only the lab owner can change the lab's settings.</p></Page>;
  return (
    <Page title="Settings">
      <LabSection />
      <AssistantSection />
      <MacHostsSection />
      <ProvidersSection />
      <PlanSection />
    </Page>
  );
}
