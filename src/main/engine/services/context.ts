import type { BlobStore } from '../blobs/blob-store.js';
import type { EngineConfig } from '../config.js';
import type { Role } from '../domain/roles.js';
import type { SecretStore } from '../secrets.js';
import type { Stores } from '../store/index.js';
import type { OrganizationRow } from '../store/organizations.js';
import type { UserRow } from '../store/users.js';
import type { Chats } from './chats.js';
import type { DeviceAllocator } from './devices.js';
import type { FileManager } from './files.js';
import type { InstanceManager } from './instances.js';
import type { LanSharing } from './lab.js';
import type { LiveScreens } from './live-screen.js';

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
  /** Mac instances on the lab's hosts, and the hosts' health. */
  instances: InstanceManager;
  /** The assistant's executions in flight and their event log. */
  chats: Chats;
  /** Credentials the engine must read back (Mac hosts' SSH keys and passwords): the keychain, or a 0600 file. */
  secrets: SecretStore;
  /** The HTTPS server on all interfaces that LAN sharing switches on and off. */
  lanSharing: LanSharing;
  /** The live screens being watched, one feed per allocation; screenshots reuse their latest frame. */
  screens: LiveScreens;
  /** Points the Android fleet at another adb server at once; absent when the Android fleet is off (BENCHTOP_ADB=off). */
  retargetAdb?: (address: { host: string; port: number }) => Promise<void>;
}

/** Who is calling: an interactive (JWT) user, or an API key acting for the user who created it. */
export interface Caller {
  kind: 'user' | 'key';
  user: UserRow;
  /** Set for API keys: the key and the one organization it is bound to. */
  key?: { id: string; organizationId: string };
}

/** The organization a request acts on, and the caller's role in it as of this request. */
export interface Scope {
  caller: Caller;
  organization: OrganizationRow;
  role: Role;
}
