import { describe, expect, it } from 'vitest';
import { createApiClient } from '../../src/shared/client/api-client.js';
import { createAuthStore, type AuthStore } from '../../src/renderer/stores/auth-store.js';
import { client, OWNER_EMAIL, OWNER_PASSWORD, useEngine } from '../support/engine.js';
import { memoryStorage } from './support.js';

/** The renderer's wiring: a client that reads its token and organization from the store, and signs out on a 401. */
function wired(api: string, storage = memoryStorage(), pageFetch: typeof fetch = fetch) {
  const apiClient = createApiClient({
    origin: api.replace(/\/api\/v1$/, ''),
    fetch: pageFetch,
    token: () => store.getState().token,
    organization: () => store.getState().organizationId,
    onUnauthorized: () => store.getState().logout(),
  });
  const store: AuthStore = createAuthStore(() => apiClient, storage);
  return { store, apiClient, storage };
}

describe('auth store', () => {
  const lab = useEngine();

  it('keeps the API\'s message for a refused login, and signs in with the Personal organization selected', async () => {
    const { store, storage } = wired(lab.t.api);
    await store.getState().login(OWNER_EMAIL, 'wrong-password');
    const refused = await client(lab.t.api).call('POST', '/auth/login', { body: { email: OWNER_EMAIL, password: 'wrong-password' } });
    expect(store.getState()).toMatchObject({ token: undefined, user: undefined, busy: false, error: refused.body.error.message });

    await store.getState().login(OWNER_EMAIL, OWNER_PASSWORD);
    const s = store.getState();
    expect(s.error).toBeUndefined();
    expect(s.user).toMatchObject({ email: OWNER_EMAIL, labOwner: true });
    expect(s.organizations).toHaveLength(1);
    expect(s.organizationId).toBe(s.organizations[0]!.id);
    expect(storage.items.get('benchtop.token')).toBe(s.token);
  });

  it('acts on the organization switched to, remembers it across a restore, and ignores an unknown one', async () => {
    const { store, apiClient, storage } = wired(lab.t.api);
    await store.getState().login(OWNER_EMAIL, OWNER_PASSWORD);
    const personal = store.getState().organizationId!;
    const team = await apiClient.createOrganization('Store Team');
    await store.getState().refreshOrganizations();
    store.getState().switchOrganization(team.id);
    store.getState().switchOrganization('6f1c1a52-52a8-4a8e-9a55-1b5f3c9f0000');
    expect(store.getState().organizationId).toBe(team.id);

    const session = await apiClient.createSession();
    expect(session.organizationId).toBe(team.id);

    // A new page of the same tab: the token and the organization come back from storage.
    const again = wired(lab.t.api, storage);
    await again.store.getState().restore();
    expect(again.store.getState()).toMatchObject({ organizationId: team.id, user: { email: OWNER_EMAIL } });
    expect((await again.apiClient.sessions()).data.map((x) => x.id)).toContain(session.id);
    again.store.getState().switchOrganization(personal);
    expect((await again.apiClient.sessions()).data.map((x) => x.id)).not.toContain(session.id);
  });

  it('checks a restored token once, however often the page asks (before its first drawing, and again once it shows)', async () => {
    const { store, storage } = wired(lab.t.api);
    await store.getState().login(OWNER_EMAIL, OWNER_PASSWORD);
    const asked: string[] = [];
    const again = wired(lab.t.api, storage, (input, init) => {
      asked.push(new URL(String(input)).pathname);
      return fetch(input, init);
    });
    await Promise.all([again.store.getState().restore(), again.store.getState().restore()]);
    await again.store.getState().restore();
    expect(again.store.getState()).toMatchObject({ token: store.getState().token, user: { email: OWNER_EMAIL } });
    expect(asked.sort()).toEqual(['/api/v1/me', '/api/v1/organizations']);
  });

  it('signs out when the API answers 401, and forgets a stored token that no longer works', async () => {
    const { store, apiClient, storage } = wired(lab.t.api);
    await store.getState().login(OWNER_EMAIL, OWNER_PASSWORD);
    store.setState({ token: 'not-a-token' });
    await expect(apiClient.sessions()).rejects.toMatchObject({ status: 401 });
    expect(store.getState().token).toBeUndefined();
    expect(storage.items.has('benchtop.token')).toBe(false);

    storage.setItem('benchtop.token', 'expired-or-forged');
    const restored = wired(lab.t.api, storage);
    await restored.store.getState().restore();
    expect(restored.store.getState().user).toBeUndefined();
    expect(restored.store.getState().token).toBeUndefined();
    expect(storage.items.has('benchtop.token')).toBe(false);
  });

  it('signs up a teammate, who starts in their own Personal organization', async () => {
    const { store } = wired(lab.t.api);
    await store.getState().signup('new-mate@lab.test', 'a-long-password');
    expect(store.getState().user).toMatchObject({ email: 'new-mate@lab.test', labOwner: false });
    expect(store.getState().organizations).toEqual([expect.objectContaining({ personal: true, role: 'admin' })]);
    await store.getState().signup('new-mate@lab.test', 'a-long-password');
    expect(store.getState().error).toMatch(/./);
    expect(store.getState().user).toBeUndefined();
  });
});
