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

/**
 * The page's fetch, which answers a request that prefetch.ts already made (the first screen's first few) with that
 * answer, once, when it was asked with the same token and organization.
 */
const pageFetch: typeof fetch = (input, init) => {
  const early = typeof input === 'string' && (init?.method ?? 'GET') === 'GET' ? prefetched?.get(input) : undefined;
  if (early) {
    prefetched!.delete(input as string);
    const headers = (init?.headers ?? {}) as Record<string, string>;
    if (headers.authorization === early.authorization && (headers['x-organization-id'] ?? null) === early.organization) return early.response;
  }
  return fetch(input, init);
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
export const uploadsStore = createUploadsStore(() => api, browserUploadTransport(() => authStore.getState().token));

export const useAuth = <T>(pick: (s: ReturnType<typeof authStore.getState>) => T) => useStore(authStore, pick);
export const useFleet = <T>(pick: (s: ReturnType<typeof fleetStore.getState>) => T) => useStore(fleetStore, pick);
export const useSessions = <T>(pick: (s: ReturnType<typeof sessionsStore.getState>) => T) => useStore(sessionsStore, pick);
export const useUploads = <T>(pick: (s: ReturnType<typeof uploadsStore.getState>) => T) => useStore(uploadsStore, pick);
