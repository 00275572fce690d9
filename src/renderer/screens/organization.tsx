import { useState, type FormEvent } from 'react';
import type { Member } from '../../shared/api/organizations.js';
import { api, authStore, useAuth } from '../app-context.js';
import { Empty, ErrorBanner, fmtTime, Page, useAction, useLoad } from '../ui.js';
import { ApiKeyUsage } from '../components/api-key-usage.js';

const ROLES: Array<Member['role']> = ['admin', 'readwrite', 'readonly'];

function Organizations() {
  const organizations = useAuth((s) => s.organizations);
  const current = useAuth((s) => s.organizationId);
  const [name, setName] = useState('');
  const create = useAction();
  const submit = async (event: FormEvent) => {
    event.preventDefault();
    const org = await create.run(() => api.createOrganization(name.trim()));
    if (!org) return;
    setName('');
    await authStore.getState().refreshOrganizations();
    authStore.getState().switchOrganization(org.id);
  };
  return (
    <section aria-labelledby="orgs-title">
      <h2 id="orgs-title">Your organizations</h2>
      <ul className="org-list">
        {organizations.map((o) => (
          <li key={o.id}>
            <span>{o.name}{o.personal && <span className="muted">{o.personalOf ? ` (${o.personalOf}'s personal organization)` : ' (yours, personal)'}</span>} · {o.role}</span>
            {o.id === current ? <span className="chip">current</span> : (
              <button type="button" onClick={() => authStore.getState().switchOrganization(o.id)} aria-label={`Switch to ${o.name}`}>Switch</button>
            )}
          </li>
        ))}
      </ul>
      <form className="inline-form" onSubmit={(e) => void submit(e)}>
        <label>New organization <input value={name} required maxLength={200} onChange={(e) => setName(e.target.value)} /></label>
        <button type="submit" disabled={create.pending}>Create</button>
      </form>
      <ErrorBanner error={create.error} />
    </section>
  );
}

function Members({ orgId, admin, me }: { orgId: string; admin: boolean; me: string }) {
  const members = useLoad(() => api.members(orgId), [orgId]);
  const change = useAction();
  // What a role change did, said where focus stays (the select), so that neither focus nor the reader is left behind.
  const [changed, setChanged] = useState<string>();
  return (
    <section aria-labelledby="members-title">
      <h2 id="members-title">Members</h2>
      <ErrorBanner error={members.error ?? change.error} />
      <p className="ok" role="status">{changed}</p>
      <table className="table" aria-label="Members">
        <thead><tr><th>Member</th><th>Role</th><th>Joined</th>{admin && <th><span className="visually-hidden">Actions</span></th>}</tr></thead>
        <tbody>
          {members.data?.data.map((m) => (
            <tr key={m.userId}>
              <td>{m.name || m.email} <span className="muted">{m.email}</span></td>
              <td>
                {admin && m.userId !== me ? (
                  <select aria-label={`Role of ${m.email}`} value={m.role} onChange={(e) => {
                    const select = e.currentTarget;
                    const role = e.target.value as Member['role'];
                    setChanged(undefined);
                    void change.run(async () => {
                      await api.changeRole(orgId, m.userId, role);
                      await members.reload();
                      setChanged(`${m.email} is now ${role}, from their next request.`);
                    }).finally(() => {
                      // Focus stays on the select it was changed with, whatever drew the list again meanwhile.
                      if (document.activeElement === document.body) select.focus();
                    });
                  }}>
                    {ROLES.map((r) => <option key={r} value={r}>{r}</option>)}
                  </select>
                ) : m.role}
              </td>
              <td>{fmtTime(m.joinedAt)}</td>
              {admin && (
                <td>
                  {m.userId !== me && (
                    <button type="button" className="danger" aria-label={`Remove ${m.email}`} disabled={change.pending} onClick={() => {
                      if (!window.confirm(`Remove ${m.email} from this organization? Their API keys for it stop working.`)) return;
                      void change.run(async () => {
                        await api.removeMember(orgId, m.userId);
                        await members.reload();
                      });
                    }}>Remove</button>
                  )}
                </td>
              )}
            </tr>
          ))}
        </tbody>
      </table>
    </section>
  );
}

function SentInvitations({ orgId }: { orgId: string }) {
  const invitations = useLoad(() => api.organizationInvitations(orgId), [orgId]);
  const [email, setEmail] = useState('');
  const [role, setRole] = useState<Member['role']>('readwrite');
  const act = useAction();
  const submit = async (event: FormEvent) => {
    event.preventDefault();
    if ((await act.run(() => api.invite(orgId, email.trim(), role))) === undefined) return;
    setEmail('');
    await invitations.reload();
  };
  return (
    <section aria-labelledby="invite-title">
      <h2 id="invite-title">Invitations</h2>
      <form className="inline-form" onSubmit={(e) => void submit(e)}>
        <label>Email <input type="email" required value={email} onChange={(e) => setEmail(e.target.value)} /></label>
        <label>Role
          <select value={role} onChange={(e) => setRole(e.target.value as Member['role'])}>{ROLES.map((r) => <option key={r} value={r}>{r}</option>)}</select>
        </label>
        <button type="submit" className="primary" disabled={act.pending}>Create invitation link</button>
      </form>
      <p className="muted">
        A private lab sends no mail: give the person the link (chat, a ticket). It opens at an address they can reach (the
        LAN's while LAN sharing is on), shows who invited them, and lets only that email sign up, even while sign-up is
        invitation-only, or sign in and accept.
      </p>
      <ErrorBanner error={act.error ?? invitations.error} />
      {invitations.data?.data.length === 0 && <Empty>No pending invitations.</Empty>}
      <ul className="invitations" aria-label="Pending invitations">
        {invitations.data?.data.map((i) => (
          <li key={i.id}>
            <span>{i.email} · {i.role} · expires {fmtTime(i.expiresAt)}</span>
            {/* A text area that grows with the link: the whole link shows, at any width, however long the address. */}
            <textarea readOnly rows={1} className="invite-link" aria-label={`Invitation link for ${i.email}`} value={i.link} onFocus={(e) => e.currentTarget.select()} />
            <button type="button" aria-label={`Copy link for ${i.email}`} onClick={() => void navigator.clipboard?.writeText(i.link).catch(() => undefined)}>Copy link</button>
            <button type="button" aria-label={`Revoke the invitation of ${i.email}`} onClick={() => void act.run(async () => {
              await api.revokeInvitation(orgId, i.id);
              await invitations.reload();
            })}>Revoke</button>
          </li>
        ))}
      </ul>
    </section>
  );
}

function IncomingInvitations() {
  const invitations = useLoad(() => api.myInvitations(), []);
  const act = useAction();
  const answer = (id: string, accept: boolean) => void act.run(async () => {
    await (accept ? api.acceptInvitation(id) : api.rejectInvitation(id));
    await Promise.all([invitations.reload(), authStore.getState().refreshOrganizations()]);
  });
  if (!invitations.data?.data.length && !act.error && !invitations.error) return null;
  return (
    <section aria-labelledby="incoming-title" className="card highlight">
      <h2 id="incoming-title">Invitations for you</h2>
      <ErrorBanner error={act.error ?? invitations.error} />
      <ul className="invitations" aria-label="Invitations for you">
        {invitations.data?.data.map((i) => (
          <li key={i.id}>
            <span>Join <strong>{i.organizationName}</strong> as {i.role}{i.invitedByEmail && <>, invited by {i.invitedByEmail}</>}</span>
            <button type="button" className="primary" aria-label={`Accept the invitation to ${i.organizationName}`} onClick={() => answer(i.id, true)}>Accept</button>
            <button type="button" aria-label={`Reject the invitation to ${i.organizationName}`} onClick={() => answer(i.id, false)}>Reject</button>
          </li>
        ))}
      </ul>
    </section>
  );
}

function ApiKeys() {
  const keys = useLoad(() => api.keys(), []);
  const [name, setName] = useState('');
  const [secret, setSecret] = useState<{ name: string; apiKey: string }>();
  const [copied, setCopied] = useState(false);
  const act = useAction();
  const submit = async (event: FormEvent) => {
    event.preventDefault();
    const created = await act.run(() => api.createKey(name.trim()));
    if (!created) return;
    setSecret({ name: created.name, apiKey: created.apiKey });
    setCopied(false);
    setName('');
    await keys.reload();
  };
  const copy = async () => {
    if (!secret) return;
    try {
      await navigator.clipboard.writeText(secret.apiKey);
      setCopied(true);
    } catch {
      act.setError('The clipboard is not available here: select the key and copy it.');
    }
  };
  return (
    <section aria-labelledby="keys-title">
      <h2 id="keys-title">API keys</h2>
      <form className="inline-form" onSubmit={(e) => void submit(e)}>
        <label>Key name <input required maxLength={100} value={name} onChange={(e) => setName(e.target.value)} placeholder="e.g. ci" /></label>
        <button type="submit" className="primary" disabled={act.pending}>Create key</button>
      </form>
      {secret && (
        <div className="card secret" role="status" aria-label="New API key">
          <p>The key <strong>{secret.name}</strong>: copy it now, it is never shown again.</p>
          <div className="secret-row">
            <input readOnly aria-label="The new API key" value={secret.apiKey} onFocus={(e) => e.currentTarget.select()} />
            <button type="button" onClick={() => void copy()}>{copied ? 'Copied' : 'Copy'}</button>
            <button type="button" className="link" onClick={() => setSecret(undefined)}>Done</button>
          </div>
          <ApiKeyUsage apiKey={secret.apiKey} />
        </div>
      )}
      <ErrorBanner error={act.error ?? keys.error} />
      {keys.data?.data.length === 0 && <Empty>No API keys. CI and mobilewright use one to reach this lab.</Empty>}
      {keys.data && keys.data.data.length > 0 && (
        <table className="table" aria-label="API keys">
          <thead><tr><th>Name</th><th>Key</th><th>Created</th><th>Last used</th><th><span className="visually-hidden">Actions</span></th></tr></thead>
          <tbody>
            {keys.data.data.map((k) => (
              <tr key={k.id}>
                <td>{k.name}</td>
                <td><code>mob_…{k.apiKeySuffix}</code></td>
                <td>{fmtTime(k.createdAt)}</td>
                <td>{fmtTime(k.lastUsedAt)}</td>
                <td><button type="button" className="danger" aria-label={`Delete the key ${k.name}`} onClick={() => void act.run(async () => {
                  await api.deleteKey(k.id);
                  await keys.reload();
                })}>Delete</button></td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </section>
  );
}

export function OrganizationScreen() {
  const organizations = useAuth((s) => s.organizations);
  const current = useAuth((s) => s.organizationId);
  const me = useAuth((s) => s.user?.id ?? '');
  const org = organizations.find((o) => o.id === current);
  return (
    <Page title={org ? org.name : 'Organization'}>
      <IncomingInvitations />
      <Organizations />
      {org && <Members orgId={org.id} admin={org.role === 'admin'} me={me} />}
      {org && org.role === 'admin' && <SentInvitations orgId={org.id} />}
      <ApiKeys />
    </Page>
  );
}
