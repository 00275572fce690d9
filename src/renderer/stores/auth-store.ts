import { createStore } from 'zustand/vanilla';
import type { User } from '../../shared/api/account.js';
import type { Organization } from '../../shared/api/organizations.js';
import type { ApiClient } from '../../shared/client/api-client.js';

/** Where a signed-in tab keeps its token across reloads: per tab, gone when the tab closes. */
export interface TokenStorage {
  getItem(key: string): string | null;
  setItem(key: string, value: string): void;
  removeItem(key: string): void;
}

const TOKEN_KEY = 'benchtop.token';
const ORG_KEY = 'benchtop.organization';

export interface AuthState {
  token: string | undefined;
  user: User | undefined;
  organizations: Organization[];
  /** The organization every request acts on (X-Organization-Id). */
  organizationId: string | undefined;
  /** Counts the user's switches of organization: screens reload what they show when it changes. */
  switches: number;
  busy: boolean;
  error: string | undefined;
  /** Why the page moved to another organization on its own (the person was removed from the one it showed). */
  notice: string | undefined;
  login(email: string, password: string): Promise<void>;
  signup(email: string, password: string): Promise<void>;
  /** Signs in with a token obtained elsewhere: the desktop window's local owner token. */
  useToken(token: string): Promise<void>;
  /** Checks a stored token and loads who it belongs to; signs out when it no longer works. */
  restore(): Promise<void>;
  /**
   * Reads the person's organizations and roles again. When the one the page shows is no longer among them, it moves
   * to their Personal organization (or their first), says why in `notice`, and counts a switch so that screens reload.
   */
  refreshOrganizations(): Promise<void>;
  switchOrganization(id: string): void;
  dismissNotice(): void;
  logout(): void;
}

export type AuthStore = ReturnType<typeof createAuthStore>;

/** `api` must read its token and organization from this store (see app-context.ts). */
export function createAuthStore(api: () => ApiClient, storage?: TokenStorage) {
  return createStore<AuthState>()((set, get) => {
    const signedIn = async (token: string) => {
      set({ token });
      const [user, orgs] = await Promise.all([api().me(), api().organizations()]);
      const remembered = storage?.getItem(ORG_KEY);
      const current = orgs.data.find((o) => o.id === remembered) ?? orgs.data.find((o) => o.personal) ?? orgs.data[0];
      storage?.setItem(TOKEN_KEY, token);
      set({ user, organizations: orgs.data, organizationId: current?.id, busy: false, error: undefined });
    };
    const attempt = async (work: () => Promise<void>) => {
      set({ busy: true, error: undefined });
      try {
        await work();
      } catch (error) {
        set({ token: undefined, user: undefined, busy: false, error: (error as Error).message });
      }
    };
    let restoring: { token: string; done: Promise<void> } | undefined;
    const check = async (token: string) => {
      await attempt(() => signedIn(token));
      if (!get().token) {
        storage?.removeItem(TOKEN_KEY);
        storage?.removeItem(ORG_KEY);
        set({ organizationId: undefined });
      }
    };
    return {
      token: storage?.getItem(TOKEN_KEY) ?? undefined,
      user: undefined,
      organizations: [],
      // A reload acts on the remembered organization at once, before the list of organizations is back.
      organizationId: storage?.getItem(ORG_KEY) ?? undefined,
      switches: 0,
      busy: false,
      error: undefined,
      notice: undefined,
      login: (email, password) => attempt(async () => signedIn((await api().login(email, password)).token)),
      signup: (email, password) => attempt(async () => signedIn((await api().signup(email, password)).token)),
      useToken: (token) => attempt(() => signedIn(token)),
      restore() {
        const token = get().token;
        if (!token) return Promise.resolve();
        // Asked twice for one token (the page, before its first drawing, and the app once it shows), it checks once.
        if (restoring?.token !== token) restoring = { token, done: check(token) };
        return restoring.done;
      },
      async refreshOrganizations() {
        const orgs = await api().organizations();
        const shown = get().organizationId;
        if (!shown || orgs.data.some((o) => o.id === shown)) return set({ organizations: orgs.data });
        const next = orgs.data.find((o) => o.personal) ?? orgs.data[0];
        const left = get().organizations.find((o) => o.id === shown)?.name ?? 'the organization this page showed';
        if (next) storage?.setItem(ORG_KEY, next.id);
        set({
          organizations: orgs.data,
          organizationId: next?.id,
          switches: get().switches + 1,
          notice: `You are no longer a member of ${left}: an admin removed you, and what you held there was released. This page now shows ${next ? next.name : 'none of your organizations'}.`,
        });
      },
      switchOrganization(id) {
        if (!get().organizations.some((o) => o.id === id)) return;
        storage?.setItem(ORG_KEY, id);
        set({ organizationId: id, switches: get().switches + 1, notice: undefined });
      },
      dismissNotice: () => set({ notice: undefined }),
      logout() {
        storage?.removeItem(TOKEN_KEY);
        storage?.removeItem(ORG_KEY);
        set({ token: undefined, user: undefined, organizations: [], organizationId: undefined, error: undefined, notice: undefined });
      },
    };
  });
}
