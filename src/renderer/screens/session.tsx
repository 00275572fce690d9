import { useState } from 'react';
import { api } from '../app-context.js';
import { ChatsPanel } from '../components/chats-panel.js';
import { DevicesPanel } from '../components/devices-panel.js';
import { InstancesPanel } from '../components/instances-panel.js';
import { ErrorBanner, fmtTime, Page, Spinner, useLoad } from '../ui.js';

const TABS = ['Devices', 'Instances', 'Chats'] as const;
type Tab = (typeof TABS)[number];

export function SessionScreen({ sessionId }: { sessionId: string }) {
  const session = useLoad(() => api.session(sessionId), [sessionId]);
  const [tab, setTab] = useState<Tab>('Devices');

  if (session.loading && !session.data) return <Spinner label="Loading the session" />;
  if (!session.data) return <Page title="Session"><ErrorBanner error={session.error} /></Page>;

  const onKeyDown = (event: React.KeyboardEvent) => {
    const step = event.key === 'ArrowRight' ? 1 : event.key === 'ArrowLeft' ? -1 : 0;
    if (!step) return;
    const next = TABS[(TABS.indexOf(tab) + step + TABS.length) % TABS.length]!;
    setTab(next);
    document.getElementById(`tab-${next}`)?.focus();
  };

  return (
    <Page title={`Session ${sessionId.slice(0, 8)}`} actions={<span className="muted">created {fmtTime(session.data.createdAt)}</span>}>
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
      {/* Panels stay mounted, so that a live screen or a terminal survives a look at another tab. */}
      {TABS.map((t) => (
        <div key={t} id={`panel-${t}`} role="tabpanel" aria-labelledby={`tab-${t}`} hidden={tab !== t}>
          {t === 'Devices' && <DevicesPanel sessionId={sessionId} />}
          {t === 'Instances' && <InstancesPanel sessionId={sessionId} />}
          {t === 'Chats' && <ChatsPanel sessionId={sessionId} active={tab === 'Chats'} />}
        </div>
      ))}
    </Page>
  );
}
