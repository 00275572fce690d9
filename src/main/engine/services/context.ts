import type { BlobStore } from '../blobs/blob-store.js';
import type { EngineConfig } from '../config.js';
import type { SecretStore } from '../secrets.js';
import type { Stores } from '../store/index.js';
import type { Chats } from './chats.js';
import type { DeviceAllocator } from './devices.js';
import type { FileManager } from './files.js';
import type { LanSharing } from './lab.js';

/** What every service function works with. */
export interface EngineContext {
  config: EngineConfig;
  stores: Stores;
  /** Milliseconds since the epoch; injectable so that tests can move time. */
  now: () => number;
  /** HMAC key for interactive tokens, generated once per data dir. */
  tokenSecret: Uint8Array;
  /** Uploaded content (test-result assets), by SHA-256, in the data dir. */
  blobs: BlobStore;
  /** Device allocation over the fleet; set once the engine has started its fleet. */
  devices: DeviceAllocator;
  /** Stored files (app binaries) and their apps. */
  files: FileManager;
  /** The assistant's executions in flight and their event log. */
  chats: Chats;
  /** Credentials the engine must read back (Mac hosts' SSH keys and passwords): the keychain, or a 0600 file. */
  secrets: SecretStore;
  /** The HTTPS server on all interfaces that LAN sharing switches on and off. */
  lanSharing: LanSharing;
  /** Points the Android fleet at another adb server at once; absent when the Android fleet is off (BENCHTOP_ADB=off). */
  retargetAdb?: (address: { host: string; port: number }) => Promise<void>;
}

export type { Caller, Scope } from './scope.js';
