import { useState, type FormEvent } from 'react';
import { JOIN_PATH } from '../../shared/api/join-path.js';
import { api, authStore, useAuth } from '../app-context.js';
import { match, usePath } from '../router.js';
import { ErrorBanner, Spinner, useLoad, useTitle } from '../ui.js';
import { JoinInvitation, PASSWORD_MIN, PasswordRule } from './join.js';

/** For browsers and LAN teammates; the desktop window signs its owner in by itself. An invitation's link shows the invitation. */
export function LoginScreen() {
  const invitation = match(`${JOIN_PATH}/:secret`, usePath());
  if (invitation) {
    return (
      <main className="centered">
        <JoinInvitation secret={invitation.secret!} />
      </main>
    );
  }
  return <SignIn />;
}

function SignIn() {
  const busy = useAuth((s) => s.busy);
  const error = useAuth((s) => s.error);
  const [mode, setMode] = useState<'login' | 'signup'>('login');
  const [email, setEmail] = useState('');
  const [password, setPassword] = useState('');
  // Sign-up is offered only while the lab lets anyone make an account; by invitation, the link is the way in.
  const signupOpen = useLoad(() => api.health(), []).data?.signupOpen;
  useTitle(mode === 'login' ? 'Sign in' : 'Sign up');

  const submit = (event: FormEvent) => {
    event.preventDefault();
    const auth = authStore.getState();
    void (mode === 'login' ? auth.login(email, password) : auth.signup(email, password));
  };

  return (
    <main className="centered">
      <form className="card login" onSubmit={submit} aria-labelledby="login-title">
        <h1 id="login-title">Benchtop</h1>
        <p className="muted">{mode === 'login' ? 'Sign in to the device lab.' : 'Create an account in this lab.'}</p>
        <label>
          Email
          <input type="email" name="email" autoComplete="username" required autoFocus value={email} onChange={(e) => setEmail(e.target.value)} />
        </label>
        <label>
          Password
          <input
            type="password"
            name="password"
            autoComplete={mode === 'login' ? 'current-password' : 'new-password'}
            required
            minLength={mode === 'signup' ? PASSWORD_MIN : 1}
            aria-describedby={mode === 'signup' ? 'password-rule' : undefined}
            value={password}
            onChange={(e) => setPassword(e.target.value)}
          />
        </label>
        {mode === 'signup' && <PasswordRule />}
        <ErrorBanner error={error} />
        <button type="submit" className="primary" disabled={busy}>
          {busy ? <Spinner label="Signing in" /> : mode === 'login' ? 'Sign in' : 'Create account'}
        </button>
        {mode === 'signup' || signupOpen ? (
          <button type="button" className="link" onClick={() => setMode(mode === 'login' ? 'signup' : 'login')}>
            {mode === 'login' ? 'New here? Create an account' : 'Have an account? Sign in'}
          </button>
        ) : signupOpen === false && <p className="muted">New here? Sign-up is by invitation: ask a member of this lab for an invitation link.</p>}
      </form>
    </main>
  );
}
