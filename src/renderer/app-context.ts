/**
 * The page's one API client and its stores. The client reads the token and organization from the auth store on
 * every request, so switching organization takes effect on the next call.
 */
import { useStore } from 'zustand';
import { createApiClient } from '../shared/client/api-client.js';
import { createAuthStore } from './stores/auth-store.js';
import { createFleetStore } from './stores/fleet-store.js';
import { createSessionsStore } from './stores/sessions-store.js';
import { createUploadsStore } from './stores/uploads-store.js';
import { browserUploadTransport } from './upload-transport.js';
import type { PrefetchGlobal } from './prefetch.js';

const prefetched = (globalThis as PrefetchGlobal).__benchtopPrefetched;

/** Whether prefetch.ts asked who is signed in (a tab that kept its token). */
export const accountAskedEarly = prefetched?.has('/api/v1/me') ?? false;
/** Whether prefetch.ts asked for the Fleet screen's lists (a signed-in tab opening the Fleet screen). */
export const fleetAskedEarly = prefetched?.has('/api/v1/fleet/devices') ?? false;

/** At most this often, a refusal makes the page read the person's organizations and roles again. */
const RECHECK_MS = 2000;
let rechecked = 0;

/**
 * A 403 or 404 for a request made in an organization may mean the person's role there changed or they were removed
 * from it: the sidebar's role and the organization shown follow at once, not at the next reload.
 */
function membershipMayHaveChanged(): void {
  if (Date.now() - rechecked < RECHECK_MS || !authStore.getState().token) return;
  rechecked = Date.now();
  void authStore.getState().refreshOrganizations().catch(() => undefined);
}

/**
 * A request the browser could not complete is asked once more when asking again changes nothing (a GET): Chromium
 * cancels the connections it is opening whenever the computer's network changes (net::ERR_NETWORK_CHANGED: a laptop
 * joining Wi-Fi, a VPN going up, a container's bridge appearing), and a screen should not show an error for that.
 */
async function fetchOnceMore(input: Parameters<typeof fetch>[0], init: RequestInit | undefined): Promise<Response> {
  try {
    return await fetch(input, init);
  } catch (error) {
    if ((init?.method ?? 'GET') !== 'GET' || init?.signal?.aborted) throw error;
    return fetch(input, init);
  }
}

/**
 * The page's fetch, which answers a request that prefetch.ts already made (the first screen's first few) with that
 * answer, once, when it was asked with the same token and organization; an early request that failed is asked again.
 */
const pageFetch: typeof fetch = async (input, init) => {
  const headers = (init?.headers ?? {}) as Record<string, string>;
  const early = typeof input === 'string' && (init?.method ?? 'GET') === 'GET' ? prefetched?.get(input) : undefined;
  let response: Response | undefined;
  if (early) {
    prefetched!.delete(input as string);
    if (headers.authorization === early.authorization && (headers['x-organization-id'] ?? null) === early.organization) {
      response = await early.response.catch(() => undefined);
    }
  }
  response ??= await fetchOnceMore(input, init);
  if ((response.status === 403 || response.status === 404) && headers['x-organization-id']) membershipMayHaveChanged();
  return response;
};

export const authStore = createAuthStore(() => api, typeof sessionStorage === 'undefined' ? undefined : sessionStorage);

export const api = createApiClient({
  origin: '',
  token: () => authStore.getState().token,
  organization: () => authStore.getState().organizationId,
  onUnauthorized: () => authStore.getState().logout(),
  fetch: pageFetch,
});

export const fleetStore = createFleetStore(() => api);
export const sessionsStore = createSessionsStore(() => api);
/** Hashing in a worker and a PUT with upload progress: the Apps' uploads and the phone's Files tab both send by it. */
export const uploadTransport = browserUploadTransport(() => authStore.getState().token);
export const uploadsStore = createUploadsStore(() => api, uploadTransport);

export const useAuth = <T>(pick: (s: ReturnType<typeof authStore.getState>) => T) => useStore(authStore, pick);
export const useFleet = <T>(pick: (s: ReturnType<typeof fleetStore.getState>) => T) => useStore(fleetStore, pick);
export const useSessions = <T>(pick: (s: ReturnType<typeof sessionsStore.getState>) => T) => useStore(sessionsStore, pick);
export const useUploads = <T>(pick: (s: ReturnType<typeof uploadsStore.getState>) => T) => useStore(uploadsStore, pick);
