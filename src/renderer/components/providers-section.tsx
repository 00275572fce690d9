import { useState, type FormEvent } from 'react';
import type { CreateProviderBody, Provider } from '../../shared/api/providers.js';
import { api } from '../app-context.js';
import { Empty, ErrorBanner, fmtTime, Spinner, Status, useAction, useLoad } from '../ui.js';

const EMPTY = { name: '', address: '', port: '22', username: '', privateKey: '', password: '', adbPort: '5037', hostKey: '' };

/**
 * Adding a provider takes two steps: the hub reads the host key its sshd presents and shows it, and only the key the
 * owner confirms (or pasted beforehand, from `ssh-keygen -lf` on the box) is pinned. The add is refused if the box then
 * presents another.
 */
function ProviderForm({ onDone }: { onDone(): void }) {
  const [f, setF] = useState(EMPTY);
  const [seen, setSeen] = useState<{ address: string; port: number; hostKeySha256: string }>();
  const act = useAction();
  const set = (k: keyof typeof EMPTY) => (e: { target: { value: string } }) => {
    setF({ ...f, [k]: e.target.value });
    // Another box: its key must be read again.
    if (k === 'address' || k === 'port') setSeen(undefined);
  };
  const pasted = f.hostKey.trim();
  const add = async (hostKeySha256: string) => {
    const body: CreateProviderBody = {
      name: f.name.trim(),
      address: f.address.trim(),
      port: Number(f.port),
      username: f.username.trim(),
      adbPort: Number(f.adbPort),
      hostKeySha256,
      ...(f.privateKey ? { privateKey: f.privateKey } : {}),
      ...(f.password ? { password: f.password } : {}),
    };
    if (await act.run(() => api.addLabProvider(body))) onDone();
  };
  const submit = async (event: FormEvent) => {
    event.preventDefault();
    if (seen) return add(seen.hostKeySha256);
    const read = await act.run(() => api.readLabProviderHostKey({ address: f.address.trim(), port: Number(f.port) }));
    if (!read) return;
    if (pasted && pasted !== read.hostKeySha256) {
      act.setError(`${read.address}:${read.port} presents the host key ${read.hostKeySha256}, not the one you pasted. Nothing was added: check which box answers at that address.`);
      return;
    }
    if (pasted) return add(pasted);
    setSeen(read);
  };
  const mismatch = seen && pasted && pasted !== seen.hostKeySha256;
  return (
    <form className="card stack" onSubmit={(e) => void submit(e)} aria-label="Add a provider">
      <div className="grid-2">
        <label>Name <input required value={f.name} onChange={set('name')} placeholder="rack-2" /></label>
        <label>Address <input required value={f.address} onChange={set('address')} placeholder="10.0.0.42" /></label>
        <label>SSH port <input type="number" min={1} max={65535} value={f.port} onChange={set('port')} /></label>
        <label>User <input required value={f.username} onChange={set('username')} placeholder="benchtop" /></label>
        <label>adb server port <input type="number" min={1} max={65535} value={f.adbPort} onChange={set('adbPort')} /></label>
        <label>Password <input type="password" autoComplete="off" value={f.password} onChange={set('password')} /></label>
      </div>
      <label>Private key <textarea rows={3} value={f.privateKey} onChange={set('privateKey')} placeholder="-----BEGIN OPENSSH PRIVATE KEY-----" /></label>
      <label>Expected host key (optional)
        <input value={f.hostKey} onChange={set('hostKey')} pattern="SHA256:[A-Za-z0-9+\/]{43}" placeholder="SHA256:… as ssh-keygen -lf /etc/ssh/ssh_host_ed25519_key.pub prints it on the box" />
      </label>
      {seen && (
        <div className={mismatch ? 'warning' : 'card'} role="group" aria-label="Host key">
          <p>{seen.address}:{seen.port} presents the host key</p>
          <p><code className="wrap" aria-label="Host key fingerprint">{seen.hostKeySha256}</code></p>
          <p className="muted">Compare it with what the box shows (<code>ssh-keygen -lf /etc/ssh/ssh_host_ed25519_key.pub</code>): only this key will be trusted for this provider.</p>
        </div>
      )}
      <ErrorBanner error={act.error} />
      <div className="button-row">
        <button type="submit" className="primary" disabled={act.pending || Boolean(mismatch)}>
          {act.pending ? <Spinner label="Checking the provider" /> : seen ? 'Trust this key and add' : 'Read the host key'}
        </button>
        <button type="button" onClick={onDone}>Cancel</button>
      </div>
    </form>
  );
}

/** The lab's providers (other boxes whose phones join the fleet over SSH): add, check, pause, remove. */
export function ProvidersSection() {
  const providers = useLoad(() => api.labProviders(), [], 5000);
  const [adding, setAdding] = useState(false);
  const act = useAction();
  const change = (run: () => Promise<unknown>) => void act.run(async () => {
    await run();
    await providers.reload();
  });
  const row = (p: Provider) => (
    <tr key={p.id}>
      <td>{p.name}{p.paused && <span className="muted"> (paused)</span>}</td>
      <td><code>{p.username}@{p.address}:{p.port}</code>{p.hostKeySha256 && <div className="muted"><code className="wrap" title="The pinned host key">{p.hostKeySha256}</code></div>}</td>
      <td>
        <Status value={p.health} />
        {p.healthMessage && <span className="muted"> {p.healthMessage}</span>}
        {p.roundTripMs !== null && <span className="muted"> {p.roundTripMs} ms</span>}
      </td>
      <td>
        {p.phones}
        {p.duplicateSerials.length > 0 && <span className="muted" title="Another host reported these serials first: they stay out of the fleet."> ({p.duplicateSerials.length} duplicate serials)</span>}
      </td>
      <td>{fmtTime(p.checkedAt)}</td>
      <td className="button-row">
        <button type="button" aria-label={`Check ${p.name}`} onClick={() => change(() => api.updateLabProvider(p.id, { address: p.address }))}>Check</button>
        <button type="button" aria-label={`${p.paused ? 'Resume' : 'Pause'} ${p.name}`} onClick={() => change(() => api.updateLabProvider(p.id, { paused: !p.paused }))}>{p.paused ? 'Resume' : 'Pause'}</button>
        <button type="button" className="danger" aria-label={`Remove ${p.name}`} onClick={() => change(() => api.deleteLabProvider(p.id))}>Remove</button>
      </td>
    </tr>
  );
  return (
    <section aria-labelledby="providers-title" className="card">
      <h2 id="providers-title">Providers</h2>
      <p className="muted">Other boxes with an adb server (and usbmuxd for iPhones) and sshd: their phones join this lab's fleet over SSH.</p>
      <ErrorBanner error={act.error ?? providers.error} />
      {providers.data?.data.length === 0 && <Empty>No providers: every phone is plugged into this workstation.</Empty>}
      {providers.data && providers.data.data.length > 0 && (
        <table className="table" aria-label="Providers">
          <thead><tr><th>Name</th><th>Login</th><th>Health</th><th>Phones</th><th>Checked</th><th><span className="visually-hidden">Actions</span></th></tr></thead>
          <tbody>{providers.data.data.map(row)}</tbody>
        </table>
      )}
      {adding ? <ProviderForm onDone={() => { setAdding(false); void providers.reload(); }} /> : <button type="button" onClick={() => setAdding(true)}>Add a provider</button>}
    </section>
  );
}
