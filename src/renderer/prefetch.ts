/**
 * The first screen's data, asked for before the app's bundle has downloaded and run: the build inlines this script at
 * the top of index.html (vite.renderer.config.ts), so who is signed in (on every screen) and the lab's phones, hosts
 * and providers (on the Fleet screen) come back while the browser still downloads and parses the app, not after it.
 * The app's API client takes these answers (once) in place of its own first requests (app-context.ts). It imports and
 * exports nothing: a few hundred bytes, run where they stand.
 */

/** An answer asked for early, with the credentials it was asked with. */
export interface Prefetched {
  authorization: string;
  organization: string | null;
  response: Promise<Response>;
}

/** Where the app finds them (app-context.ts): a global, since this script and the app's bundle share nothing else. */
export interface PrefetchGlobal {
  __benchtopPrefetched?: Map<string, Prefetched>;
}

/** What every screen asks first, without an organization: who is signed in, and their organizations. */
const ACCOUNT_REQUESTS = ['/api/v1/me', '/api/v1/organizations'];
/** The Fleet screen's requests, as its store makes them, with the organization this tab remembered. */
const FLEET_REQUESTS = ['/api/v1/fleet/devices', '/api/v1/fleet/hosts', '/api/v1/fleet/providers'];

// The same storage keys as auth-store.ts: a tab that is signed in kept its token there.
const token = sessionStorage.getItem('benchtop.token');
const organization = sessionStorage.getItem('benchtop.organization');
if (token) {
  const authorization = `Bearer ${token}`;
  const early = new Map<string, Prefetched>();
  const ask = (paths: string[], org: string | null) => {
    const headers: Record<string, string> = { authorization, ...(org ? { 'x-organization-id': org } : {}) };
    for (const path of paths) {
      const response = fetch(path, { headers });
      // An answer nobody takes (the user was signed out meanwhile) must not be an unhandled rejection.
      response.catch(() => undefined);
      early.set(path, { authorization, organization: org, response });
    }
  };
  ask(ACCOUNT_REQUESTS, null);
  if (/^\/(fleet\/?)?$/.test(location.pathname)) ask(FLEET_REQUESTS, organization);
  (globalThis as PrefetchGlobal).__benchtopPrefetched = early;
}
