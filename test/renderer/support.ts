import { createApiClient } from '../../src/shared/client/api-client.js';
import type { TokenStorage } from '../../src/renderer/stores/auth-store.js';

/** sessionStorage's shape, in memory. */
export function memoryStorage(): TokenStorage & { items: Map<string, string> } {
  const items = new Map<string, string>();
  return {
    items,
    getItem: (k) => items.get(k) ?? null,
    setItem: (k, v) => void items.set(k, v),
    removeItem: (k) => void items.delete(k),
  };
}

/** The renderer's API client against an engine, with a fixed token and organization. */
export function clientFor(api: string, token: string, organization?: string) {
  return createApiClient({ origin: api.replace(/\/api\/v1$/, ''), token: () => token, organization: () => organization });
}
