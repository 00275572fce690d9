import { lazy, Suspense, useEffect, useRef, useState, type ReactNode } from 'react';
import { JOIN_PATH } from '../shared/api/join-path.js';
import { authStore, useAuth } from './app-context.js';
import { desktopBridge } from './desktop-bridge.js';
import { linkTo, match, navigate, usePath } from './router.js';
import { CalendarScreen } from './screens/calendar.js';
import { ReleaseWarnings } from './components/release-warnings.js';
import { FleetScreen } from './screens/fleet.js';
import { JoinInvitation } from './screens/join.js';
import { LoginScreen } from './screens/login.js';
import { Spinner } from './ui.js';

// The Fleet screen, which every lab engineer opens first, comes with the page; every other screen loads when first
// shown. In one bundle, the browser parsed the phone page, the chats and the settings before it could list a phone.
const OrganizationScreen = lazy(() => import('./screens/organization.js').then((m) => ({ default: m.OrganizationScreen })));
const SessionScreen = lazy(() => import('./screens/session.js').then((m) => ({ default: m.SessionScreen })));
const SessionsScreen = lazy(() => import('./screens/sessions.js').then((m) => ({ default: m.SessionsScreen })));
const SettingsScreen = lazy(() => import('./screens/settings.js').then((m) => ({ default: m.SettingsScreen })));
const FilesScreen = lazy(() => import('./screens/files.js').then((m) => ({ default: m.FilesScreen })));
const TestResultScreen = lazy(() => import('./screens/test-results.js').then((m) => ({ default: m.TestResultScreen })));
const TestResultsScreen = lazy(() => import('./screens/test-results.js').then((m) => ({ default: m.TestResultsScreen })));
const UsageScreen = lazy(() => import('./screens/usage.js').then((m) => ({ default: m.UsageScreen })));

/**
 * How often a signed-in page reads the person's organizations and roles again: a role an admin changed shows in the
 * sidebar without a reload, even when nothing the person did was refused (a refusal rereads them at once).
 */
const ORGANIZATIONS_POLL_MS = 5000;

const NAV = [
  { path: '/fleet', label: 'Fleet' },
  { path: '/sessions', label: 'Sessions' },
  { path: '/calendar', label: 'Calendar' },
  { path: '/test-results', label: 'Test results' },
  { path: '/files', label: 'Files & Apps' },
  { path: '/organization', label: 'Organization' },
  { path: '/usage', label: 'Usage' },
  { path: '/settings', label: 'Settings', ownerOnly: true },
];

function route(path: string): ReactNode {
  let p: Record<string, string> | undefined;
  if ((p = match('/sessions/:id', path))) return <SessionScreen key={p.id} sessionId={p.id!} />;
  if ((p = match('/test-results/:id', path))) return <TestResultScreen key={p.id} id={p.id!} />;
  if ((p = match(`${JOIN_PATH}/:secret`, path))) return <section className="page"><JoinInvitation secret={p.secret!} /></section>;
  switch (path.replace(/\/$/, '') || '/fleet') {
    case '/fleet': return <FleetScreen />;
    case '/sessions': return <SessionsScreen />;
    case '/calendar': return <CalendarScreen />;
    case '/test-results': return <TestResultsScreen />;
    case '/files': return <FilesScreen />;
    case '/organization': return <OrganizationScreen />;
    case '/usage': return <UsageScreen />;
    case '/settings': return <SettingsScreen />;
    default: return <p className="empty" ref={() => { document.title = 'Not found · Benchtop'; }}>No page at {path}. <a href="/fleet" onClick={linkTo('/fleet')}>Go to the fleet</a>.</p>;
  }
}

function OrganizationSwitcher() {
  const organizations = useAuth((s) => s.organizations);
  const current = useAuth((s) => s.organizationId);
  return (
    <label className="org-switcher">
      Organization
      <select aria-label="Current organization" value={current ?? ''} onChange={(e) => authStore.getState().switchOrganization(e.target.value)}>
        {organizations.map((o) => (
          <option key={o.id} value={o.id}>{o.personalOf ? `${o.name} of ${o.personalOf}` : o.name} ({o.role})</option>
        ))}
      </select>
    </label>
  );
}

/** Why the page moved to another organization on its own; it stays until read. */
function MembershipNotice() {
  const notice = useAuth((s) => s.notice);
  const path = usePath();
  // A session or a test result of the organization left is no longer there: its list in the new one is.
  useEffect(() => {
    const detail = /^\/(sessions|test-results)\/./.exec(path);
    if (notice && detail) navigate(`/${detail[1]}`);
  }, [notice]);
  if (!notice) return null;
  return (
    <div className="warning membership-notice" role="alert">
      <span>{notice}</span>
      <button type="button" className="link" onClick={() => authStore.getState().dismissNotice()}>Dismiss</button>
    </div>
  );
}

function skipToContent(event: React.MouseEvent) {
  event.preventDefault();
  document.getElementById('main')?.focus();
}

export function App() {
  const path = usePath();
  const user = useAuth((s) => s.user);
  const token = useAuth((s) => s.token);
  const switches = useAuth((s) => s.switches);
  const bridge = desktopBridge();
  const [starting, setStarting] = useState(Boolean(bridge));

  useEffect(() => {
    // The desktop window signs its local owner in; a browser checks this tab's token while the screen already
    // loads with it, and shows the login if it no longer works.
    const start = bridge && !authStore.getState().token
      ? bridge.getOwnerToken().then(({ token: t }) => authStore.getState().useToken(t))
      : authStore.getState().restore();
    void start.finally(() => setStarting(false));
  }, [bridge]);

  // A page that replaced the one holding the focus (a button that navigated) takes it, rather than the body. A page
  // loaded afresh keeps the browser's order, which starts at the skip link.
  const shownPath = useRef(path);
  useEffect(() => {
    if (shownPath.current === path) return;
    shownPath.current = path;
    const active = document.activeElement;
    if (!active || active === document.body) document.getElementById('main')?.focus({ preventScroll: true });
  }, [path]);

  useEffect(() => {
    if (!token) return;
    const recheck = () => void authStore.getState().refreshOrganizations().catch(() => undefined);
    const timer = setInterval(recheck, ORGANIZATIONS_POLL_MS);
    window.addEventListener('focus', recheck);
    return () => {
      clearInterval(timer);
      window.removeEventListener('focus', recheck);
    };
  }, [token]);

  if (!token) return starting ? <main className="centered"><Spinner label="Signing in" /></main> : <LoginScreen />;

  return (
    <div className="shell">
      {/* The page has <base href="/">, so a bare #main would point at /#main (the fleet): the link names this path, and
          moves focus itself. */}
      <a className="skip" href={`${path}#main`} onClick={skipToContent}>Skip to content</a>
      <nav className="sidebar" aria-label="Main">
        <div className="brand">Benchtop</div>
        <ul>
          {NAV.filter((n) => !n.ownerOnly || user?.labOwner).map((n) => (
            <li key={n.path}>
              <a href={n.path} onClick={linkTo(n.path)} aria-current={path.startsWith(n.path) || (path === '/' && n.path === '/fleet') ? 'page' : undefined}>
                {n.label}
              </a>
            </li>
          ))}
        </ul>
        <div className="sidebar-footer">
          <OrganizationSwitcher />
          <div className="whoami" title={user?.email}>{user?.email ?? ' '}</div>
          <button type="button" onClick={() => { authStore.getState().logout(); navigate('/'); }}>Sign out</button>
        </div>
      </nav>
      {/* Keyed by the switches: every screen reloads what it shows when the user changes organization. */}
      <main id="main" tabIndex={-1} key={switches}>
        <MembershipNotice />
        <ReleaseWarnings />
        <Suspense fallback={<Spinner label="Loading" />}>{route(path)}</Suspense>
      </main>
    </div>
  );
}
