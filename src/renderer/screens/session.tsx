import { useState, type FormEvent } from 'react';
import type { Session } from '../../shared/api/sessions.js';
import { api, useAuth } from '../app-context.js';
import { ChatsPanel } from '../components/chats-panel.js';
import { DevicesPanel } from '../components/devices-panel.js';
import { InstancesPanel } from '../components/instances-panel.js';
import { ErrorBanner, fmtTime, Page, Spinner, useAction, useLoad } from '../ui.js';

const TABS = ['Devices', 'Instances', 'Chats'] as const;
type Tab = (typeof TABS)[number];

export const sessionLabel = (s: Pick<Session, 'id' | 'name'>) => s.name ?? `Session ${s.id.slice(0, 8)}`;

/** The session's name as its heading, and a Rename button that turns it into a field. */
function SessionName({ session, onSaved }: { session: Session; onSaved(): void }) {
  const [editing, setEditing] = useState(false);
  const [name, setName] = useState(session.name ?? '');
  const save = useAction();
  const submit = async (event: FormEvent) => {
    event.preventDefault();
    if ((await save.run(() => api.renameSession(session.id, name.trim() || null))) !== undefined) {
      setEditing(false);
      onSaved();
    }
  };
  if (!editing) {
    return (
      <div className="session-title">
        <h1 id="page-title">{sessionLabel(session)}</h1>
        {!session.endedAt && <button type="button" className="link" onClick={() => { setName(session.name ?? ''); setEditing(true); }}>Rename</button>}
      </div>
    );
  }
  return (
    <form className="session-title" onSubmit={(e) => void submit(e)} aria-label="Rename the session">
      <h1 id="page-title" className="visually-hidden">{sessionLabel(session)}</h1>
      <input aria-label="Session name" value={name} maxLength={100} autoFocus placeholder={`Session ${session.id.slice(0, 8)}`} onChange={(e) => setName(e.target.value)} onKeyDown={(e) => e.key === 'Escape' && setEditing(false)} />
      <button type="submit" className="primary" disabled={save.pending}>Save</button>
      <button type="button" onClick={() => setEditing(false)}>Cancel</button>
      <ErrorBanner error={save.error} />
    </form>
  );
}

function EndSession({ session, onEnded }: { session: Session; onEnded(): void }) {
  const end = useAction();
  const holding = session.devices.filter((d) => d.status !== 'released').length + session.instances.filter((i) => !i.releasedAt).length;
  if (session.endedAt) return <span className="muted">ended {fmtTime(session.endedAt)}</span>;
  return (
    <>
      <span className="muted">created {fmtTime(session.createdAt)}</span>
      <button
        type="button"
        className="danger"
        disabled={end.pending}
        onClick={() => {
          const what = holding === 0 ? 'It holds nothing.' : `Its ${holding} phone${holding === 1 ? '' : 's'} and Mac instance${holding === 1 ? '' : 's'} will be released.`;
          if (!window.confirm(`End this session? ${what}`)) return;
          void end.run(() => api.endSession(session.id)).then((s) => s && onEnded());
        }}
      >
        End session
      </button>
      {end.error && <span role="alert" className="error inline">{end.error}</span>}
    </>
  );
}

export function SessionScreen({ sessionId }: { sessionId: string }) {
  const session = useLoad(() => api.session(sessionId), [sessionId]);
  const [tab, setTab] = useState<Tab>('Devices');
  const [generation, setGeneration] = useState(0);
  const me = useAuth((a) => a.user?.id);
  const owner = session.data?.createdBy;
  // A teammate's session: their email, from the organization's members, so that the phone page can name them.
  const members = useLoad(async () => (owner && owner !== me && session.data ? api.members(session.data.organizationId) : undefined), [owner, me]);
  const heldBy = owner && owner !== me ? members.data?.data.find((m) => m.userId === owner)?.email ?? 'another member' : undefined;

  if (session.loading && !session.data) return <Spinner label="Loading the session" />;
  if (!session.data) return <Page title="Session"><ErrorBanner error={session.error} /></Page>;
  const s = session.data;

  const onKeyDown = (event: React.KeyboardEvent) => {
    const step = event.key === 'ArrowRight' ? 1 : event.key === 'ArrowLeft' ? -1 : 0;
    if (!step) return;
    const next = TABS[(TABS.indexOf(tab) + step + TABS.length) % TABS.length]!;
    setTab(next);
    document.getElementById(`tab-${next}`)?.focus();
  };

  return (
    <Page
      title={sessionLabel(s)}
      heading={<SessionName session={s} onSaved={() => void session.reload()} />}
      actions={<EndSession session={s} onEnded={() => { void session.reload(); setGeneration((g) => g + 1); }} />}
    >
      {s.endedAt && <p className="ended-note warning" role="status">This session has ended: its phones and Mac instances were released, and it takes no new ones.</p>}
      <div role="tablist" aria-label="Session" className="tabs" onKeyDown={onKeyDown}>
        {TABS.map((t) => (
          <button
            key={t}
            id={`tab-${t}`}
            role="tab"
            type="button"
            aria-selected={tab === t}
            aria-controls={`panel-${t}`}
            tabIndex={tab === t ? 0 : -1}
            onClick={() => setTab(t)}
          >
            {t}
          </button>
        ))}
      </div>
      {/* Panels stay mounted, so that a live screen or a terminal survives a look at another tab; ending the session
          remounts them, so that they show what it released. */}
      {TABS.map((t) => (
        <div key={`${t}-${generation}`} id={`panel-${t}`} role="tabpanel" aria-labelledby={`tab-${t}`} hidden={tab !== t}>
          {t === 'Devices' && <DevicesPanel sessionId={sessionId} ended={Boolean(s.endedAt)} heldBy={heldBy} />}
          {t === 'Instances' && <InstancesPanel sessionId={sessionId} />}
          {t === 'Chats' && <ChatsPanel sessionId={sessionId} active={tab === 'Chats'} />}
        </div>
      ))}
    </Page>
  );
}
