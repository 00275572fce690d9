/**
 * The Fleet screen's data, asked for before the app's bundle has downloaded and run: the build inlines this script at
 * the top of index.html (vite.renderer.config.ts), so the lab's phones and hosts come back while the browser still
 * downloads and parses the app, instead of after it. The app's API client takes these answers (once) in place of its
 * own first requests (app-context.ts). It imports and exports nothing: a few hundred bytes, run where they stand.
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

/** The Fleet screen's requests, as its store makes them. */
const FLEET_REQUESTS = ['/api/v1/fleet/devices', '/api/v1/fleet/hosts'];

// The same storage keys as auth-store.ts: a tab that is signed in kept its token there.
const token = sessionStorage.getItem('benchtop.token');
const organization = sessionStorage.getItem('benchtop.organization');
if (token && /^\/(fleet\/?)?$/.test(location.pathname)) {
  const authorization = `Bearer ${token}`;
  const headers: Record<string, string> = { authorization, ...(organization ? { 'x-organization-id': organization } : {}) };
  const early = new Map<string, Prefetched>();
  for (const path of FLEET_REQUESTS) {
    const response = fetch(path, { headers });
    // An answer nobody takes (the user was signed out meanwhile) must not be an unhandled rejection.
    response.catch(() => undefined);
    early.set(path, { authorization, organization, response });
  }
  (globalThis as PrefetchGlobal).__benchtopPrefetched = early;
}
