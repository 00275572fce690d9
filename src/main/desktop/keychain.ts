/**
 * The desktop app's SecretStore: the OS keychain (Keychain on macOS, Credential Manager on Windows, the Secret
 * Service of GNOME Keyring or KWallet on Linux) through @napi-rs/keyring. No Electron import, so it runs on Node.
 */
import { AsyncEntry, type EntryOptions } from '@napi-rs/keyring';
import { existsSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { FileSecretStore, SECRETS_FILE, type SecretStore } from '../engine/secrets.js';

/** Every Benchtop credential is filed under this service name, so nothing else in the keychain is reachable. */
export const KEYCHAIN_SERVICE = 'Benchtop';
const PROBE_ACCOUNT = 'benchtop-keychain-probe';
/** A locked keyring may wait on an unlock prompt; past this the lab starts on the file rather than hang. */
const PROBE_TIMEOUT_MS = 5000;

// Pinned to the Secret Service on Linux: its other store, the kernel keyutils, forgets everything at reboot.
const ENTRY_OPTIONS: EntryOptions = { linux: { store: 'secret-service' } };

export class KeychainSecretStore implements SecretStore {
  readonly kind = 'keychain';

  async get(key: string): Promise<string | undefined> {
    return (await entry(key).getPassword()) ?? undefined;
  }

  async set(key: string, value: string): Promise<void> {
    await entry(key).setPassword(value);
  }

  async delete(key: string): Promise<void> {
    await entry(key).deleteCredential();
  }
}

const entry = (key: string) => new AsyncEntry(KEYCHAIN_SERVICE, key, ENTRY_OPTIONS);

/**
 * The keychain when it answers, probed once with a read; otherwise (no D-Bus session, no Secret Service, a keyring
 * left locked) the 0600 file in the data dir, which the engine reports as secretStore "file" so Settings warns.
 * Credentials a headless run (or a start without a keychain) left in that file move into the keychain, so a Mac
 * host added then keeps working, and no copy stays behind in the file.
 */
export async function openSecretStore(dataDir: string, log: (message: string) => void = () => {}): Promise<SecretStore> {
  // A race rather than an AbortSignal: the signal cannot stop a call the keyring's thread has already begun.
  let timer: NodeJS.Timeout | undefined;
  try {
    // The keyring is asked first: when it throws at once (no D-Bus session), no timer is left to reject with nobody
    // listening five seconds later.
    const probe = entry(PROBE_ACCOUNT).getPassword();
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`no answer within ${PROBE_TIMEOUT_MS / 1000} s`)), PROBE_TIMEOUT_MS);
    });
    await Promise.race([probe, timeout]);
  } catch (error) {
    log(`No OS keychain answered (${(error as Error).message}); secrets go to a 0600 file in ${dataDir}.`);
    return new FileSecretStore(join(dataDir, SECRETS_FILE));
  } finally {
    clearTimeout(timer);
  }
  const keychain = new KeychainSecretStore();
  const file = join(dataDir, SECRETS_FILE);
  if (existsSync(file)) {
    const left = JSON.parse(readFileSync(file, 'utf8')) as Record<string, string>;
    // The file is newer than anything the keychain holds for the same key: each move empties it.
    for (const [key, value] of Object.entries(left)) await keychain.set(key, value);
    rmSync(file);
    log(`Moved ${Object.keys(left).length} credentials from ${file} into the OS keychain.`);
  }
  return keychain;
}
