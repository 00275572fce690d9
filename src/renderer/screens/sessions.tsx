import { useEffect, useRef } from 'react';
import { api, sessionsStore, useAuth, useSessions } from '../app-context.js';
import { linkTo, navigate } from '../router.js';
import { MyBookings } from '../components/my-bookings.js';

import { Empty, ErrorBanner, fmtTime, Page, Spinner, Status, useLoad } from '../ui.js';

/** The organization's sessions, newest first; scrolling to the end loads the next page over nextCursor. */
export function SessionsScreen() {
  const { sessions, loading, done, error } = useSessions((s) => s);
  const sentinel = useRef<HTMLDivElement>(null);
  const organizationId = useAuth((s) => s.organizationId);
  const me = useAuth((s) => s.user?.id);
  // Whose session it is, by the email a teammate knows them by; the member list is visible to every member.
  const members = useLoad(() => (organizationId ? api.members(organizationId) : Promise.resolve(undefined)), [organizationId]);
  const ownerOf = (userId: string | null) => {
    if (!userId) return <span className="muted">—</span>;
    if (userId === me) return 'you';
    const member = members.data?.data.find((m) => m.userId === userId);
    return member ? member.email : <span className="muted">{members.data ? 'a former member' : '…'}</span>;
  };

  useEffect(() => void sessionsStore.getState().reset(), []);
  useEffect(() => {
    const observer = new IntersectionObserver((entries) => {
      if (entries.some((e) => e.isIntersecting)) void sessionsStore.getState().loadMore();
    }, { rootMargin: '200px' });
    if (sentinel.current) observer.observe(sentinel.current);
    return () => observer.disconnect();
  }, []);

  const create = async () => {
    const session = await sessionsStore.getState().create();
    if (session) navigate(`/sessions/${session.id}`);
  };

  return (
    <Page title="Sessions" actions={<button type="button" className="primary" onClick={() => void create()}>New session</button>}>
      <ErrorBanner error={error} />
      <MyBookings />
      {done && sessions.length === 0 ? <Empty>No sessions yet. A session holds the phones, Mac instances and chats of one piece of work.</Empty> : (
        <div className="table-wrap">
        <table className="table" aria-label="Sessions">
          <thead><tr><th>Session</th><th>Owner</th><th>Created</th><th>Phones</th><th>Instances</th></tr></thead>
          <tbody>
            {sessions.map((s) => (
              <tr key={s.id}>
                <td>
                  <a href={`/sessions/${s.id}`} onClick={linkTo(`/sessions/${s.id}`)}>{s.name ? s.name : <code>{s.id.slice(0, 8)}</code>}</a>
                  {s.endedAt && <> <Status value="ended" /></>}
                </td>
                <td>{ownerOf(s.createdBy)}</td>
                <td>{fmtTime(s.createdAt)}</td>
                <td>{s.devices.length === 0 ? <span className="muted">none</span> : s.devices.map((d) => <span key={d.id} className="chip">{d.info.name} <Status value={d.status} /></span>)}</td>
                <td>{s.instances.length === 0 ? <span className="muted">none</span> : s.instances.map((i) => <span key={i.id} className="chip">{i.os} <Status value={i.status} /></span>)}</td>
              </tr>
            ))}
          </tbody>
        </table>
        </div>
      )}
      <div ref={sentinel} aria-hidden="true" className="sentinel" />
      {loading && <Spinner label="Loading sessions" />}
      {!done && !loading && sessions.length > 0 && (
        <button type="button" onClick={() => void sessionsStore.getState().loadMore()}>Load older sessions</button>
      )}
    </Page>
  );
}
