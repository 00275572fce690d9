import { useState, type FormEvent } from 'react';
import { ApiError } from '../../shared/client/api-client.js';
import { api, authStore, useAuth } from '../app-context.js';
import { navigate } from '../router.js';
import { ErrorBanner, Spinner, useAction, useLoad, useTitle } from '../ui.js';

/** What each role lets the invitee do, in the words of the Organization screen. */
const ROLE_MEANING = {
  admin: 'admin: can also invite people and change roles',
  readwrite: 'read/write: can take phones, run sessions and create API keys',
  readonly: 'read-only: can see everything, change nothing',
} as const;

/** Into the organization the invitation was for, once the account is a member of it. */
async function landIn(organizationId: string): Promise<void> {
  await authStore.getState().refreshOrganizations();
  authStore.getState().switchOrganization(organizationId);
  navigate('/organization');
}

/** A link the lab does not know, in what the person holding it can do about it. */
const UNKNOWN_LINK = 'This invitation link does not work here: it may be mistyped or cut short, or the invitation was revoked, has expired or was used already. Ask whoever invited you to send the link again, or to make a new one.';

/** The lab's password rule (src/shared/api/account.ts: Password). */
export const PASSWORD_MIN = 8;

/** The rule under a new password's field (its aria-describedby): said before the lab refuses a password, not only after. */
export const PasswordRule = () => <p id="password-rule" className="muted field-hint">At least {PASSWORD_MIN} characters.</p>;

/**
 * An invitation's link (JOIN_PATH/<secret>): who invited whom, to which organization, with which role, and the way in
 * — a new account for the invited email (the secret lets it in even while sign-up is invitation-only), or signing in
 * to an existing one and accepting. Shown both signed out (the whole page) and signed in (inside the app).
 */
export function JoinInvitation({ secret }: { secret: string }) {
  const invitation = useLoad(() => api.invitationBySecret(secret).catch((error: unknown) => {
    throw error instanceof ApiError && error.status === 404 ? new Error(UNKNOWN_LINK) : error;
  }), [secret]);
  const user = useAuth((s) => s.user);
  const token = useAuth((s) => s.token);
  const [mode, setMode] = useState<'signup' | 'login'>('signup');
  const [password, setPassword] = useState('');
  const act = useAction();
  const inv = invitation.data;
  useTitle(inv ? `Join ${inv.organizationName}` : 'Invitation');

  if (invitation.loading) return <Spinner label="Loading the invitation" />;
  if (!inv) {
    return (
      <section className="card login" aria-labelledby="join-title">
        <h1 id="join-title">Invitation</h1>
        <ErrorBanner error={invitation.error} />
        {!token && <button type="button" className="link" onClick={() => navigate('/')}>Go to sign in</button>}
      </section>
    );
  }

  const submit = (event: FormEvent) => {
    event.preventDefault();
    void act.run(async () => {
      const { token: fresh } = mode === 'signup' ? await api.signup(inv.email, password, undefined, secret) : await api.login(inv.email, password);
      // Off the link's page before signing in, or the app would show it again, for an invitation now used up.
      navigate('/organization');
      await authStore.getState().useToken(fresh);
      if (mode === 'login') await api.acceptInvitation(inv.id);
      await landIn(inv.organizationId);
    });
  };
  const accept = () => void act.run(async () => {
    await api.acceptInvitation(inv.id);
    await landIn(inv.organizationId);
  });
  const addressedToMe = user && user.email.toLowerCase() === inv.email.toLowerCase();

  return (
    <section className="card login join" aria-labelledby="join-title">
      <h1 id="join-title">Join {inv.organizationName}</h1>
      <p>
        {inv.invitedByEmail ? <><strong>{inv.invitedByEmail}</strong> invited</> : 'You are invited,'} <strong>{inv.email}</strong> to
        the organization <strong>{inv.organizationName}</strong> on this Benchtop lab, as {ROLE_MEANING[inv.role]}.
      </p>
      {token ? (
        addressedToMe ? (
          <button type="button" className="primary" disabled={act.pending} onClick={accept}>Accept and join {inv.organizationName}</button>
        ) : (
          <>
            <p className="muted">You are signed in as {user?.email ?? 'someone else'}: only {inv.email} can accept it.</p>
            <button type="button" onClick={() => authStore.getState().logout()}>Sign out</button>
          </>
        )
      ) : (
        <form onSubmit={submit} className="stack">
          <label>
            Email
            <input type="email" name="email" autoComplete="username" readOnly value={inv.email} />
          </label>
          <label>
            Password
            <input
              type="password"
              name="password"
              autoComplete={mode === 'signup' ? 'new-password' : 'current-password'}
              required
              autoFocus
              minLength={mode === 'signup' ? PASSWORD_MIN : 1}
              aria-describedby={mode === 'signup' ? 'password-rule' : undefined}
              value={password}
              onChange={(e) => setPassword(e.target.value)}
            />
          </label>
          {mode === 'signup' && <PasswordRule />}
          <button type="submit" className="primary" disabled={act.pending}>
            {act.pending ? <Spinner label="Joining" /> : mode === 'signup' ? 'Create account and join' : 'Sign in and join'}
          </button>
          <button type="button" className="link" onClick={() => setMode(mode === 'signup' ? 'login' : 'signup')}>
            {mode === 'signup' ? 'Have an account? Sign in' : 'New here? Create an account'}
          </button>
        </form>
      )}
      <ErrorBanner error={act.error} />
    </section>
  );
}
