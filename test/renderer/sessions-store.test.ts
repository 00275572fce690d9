import { beforeAll, describe, expect, it } from 'vitest';
import { createSessionsStore } from '../../src/renderer/stores/sessions-store.js';
import { useEngine } from '../support/engine.js';
import { clientFor } from './support.js';

describe('sessions store', () => {
  const created: string[] = [];

  const lab = useEngine();

  beforeAll(async () => {
    for (let i = 0; i < 7; i++) created.push((await lab.c.call('POST', '/sessions', { token: lab.owner })).body.id);
  });

  it('pages through every session newest first over nextCursor, once each, then stops', async () => {
    const store = createSessionsStore(() => clientFor(lab.t.api, lab.owner), 3);
    // A second call while a page is loading is ignored rather than fetching the same page twice.
    await Promise.all([store.getState().loadMore(), store.getState().loadMore()]);
    expect(store.getState().sessions).toHaveLength(3);
    await store.getState().loadMore();
    await store.getState().loadMore();
    expect(store.getState()).toMatchObject({ done: true, nextCursor: undefined, loading: false, error: undefined });
    expect(store.getState().sessions.map((s) => s.id)).toEqual([...created].reverse());
    await store.getState().loadMore();
    expect(store.getState().sessions).toHaveLength(7);
  });

  it('puts a created session first, and starts over on reset', async () => {
    const store = createSessionsStore(() => clientFor(lab.t.api, lab.owner), 5);
    await store.getState().loadMore();
    const session = await store.getState().create();
    expect(store.getState().sessions[0]!.id).toBe(session!.id);
    await store.getState().reset();
    expect(store.getState().sessions.map((s) => s.id)).toEqual([session!.id, ...[...created].reverse().slice(0, 4)]);
    expect(store.getState().done).toBe(false);
  });

  it('keeps the API\'s message when a page cannot load, and can try again', async () => {
    const store = createSessionsStore(() => clientFor(lab.t.api, 'mob_not-a-key'), 5);
    await store.getState().loadMore();
    expect(store.getState()).toMatchObject({ loading: false, done: false, sessions: [] });
    expect(store.getState().error).toMatch(/./);
    expect(await store.getState().create()).toBeUndefined();
  });
});
