import type { SecretStore } from '../engine/secrets.js';

/** Apart from the engine's keys (a Mac host's SSH credentials), so the page reaches only what it saved itself. */
const PAGE_PREFIX = 'page.';
const ACCOUNT = /^[A-Za-z0-9._-]{1,100}$/;
const MAX_SECRET_CHARS = 64 * 1024;

/**
 * The keychain calls of the preload bridge. Arguments come from the page, so each one is checked here, whatever
 * TypeScript said on the other side of the IPC.
 */
export function pageSecrets(store: SecretStore) {
  const keyOf = (account: unknown) => {
    if (typeof account !== 'string' || !ACCOUNT.test(account)) {
      throw new TypeError('A keychain account is 1 to 100 letters, digits, dots, dashes or underscores.');
    }
    return PAGE_PREFIX + account;
  };
  return {
    async get(account: unknown): Promise<string | null> {
      return (await store.get(keyOf(account))) ?? null;
    },
    async set(account: unknown, secret: unknown): Promise<void> {
      const key = keyOf(account);
      if (typeof secret !== 'string' || secret.length > MAX_SECRET_CHARS) {
        throw new TypeError(`A keychain secret is a string of at most ${MAX_SECRET_CHARS} characters.`);
      }
      await store.set(key, secret);
    },
  };
}
