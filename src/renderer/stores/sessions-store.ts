import { createStore } from 'zustand/vanilla';
import type { Session } from '../../shared/api/sessions.js';
import type { ApiClient } from '../../shared/client/api-client.js';

export interface SessionsState {
  sessions: Session[];
  /** The before cursor of the next page; undefined once the last page is in. */
  nextCursor: string | undefined;
  done: boolean;
  loading: boolean;
  error: string | undefined;
  /** Loads the next page (the first one when empty); a call while one is loading is ignored. */
  loadMore(): Promise<void>;
  /** Starts again from the newest session. */
  reset(): Promise<void>;
  create(): Promise<Session | undefined>;
}

export const SESSIONS_PAGE = 30;

export function createSessionsStore(api: () => ApiClient, pageSize = SESSIONS_PAGE) {
  return createStore<SessionsState>()((set, get) => ({
    sessions: [],
    nextCursor: undefined,
    done: false,
    loading: false,
    error: undefined,
    async loadMore() {
      const { loading, done, nextCursor, sessions } = get();
      if (loading || done) return;
      set({ loading: true, error: undefined });
      try {
        const page = await api().sessions({ limit: pageSize, before: nextCursor });
        set({ sessions: [...sessions, ...page.data], nextCursor: page.nextCursor, done: !page.nextCursor, loading: false });
      } catch (error) {
        set({ loading: false, error: (error as Error).message });
      }
    },
    async reset() {
      set({ sessions: [], nextCursor: undefined, done: false, loading: false, error: undefined });
      await get().loadMore();
    },
    async create() {
      try {
        const session = await api().createSession();
        set({ sessions: [session, ...get().sessions], error: undefined });
        return session;
      } catch (error) {
        set({ error: (error as Error).message });
        return undefined;
      }
    },
  }));
}
