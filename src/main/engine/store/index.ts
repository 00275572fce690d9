import { apiKeyStore } from './api-keys.js';
import type { Db } from './db.js';
import { deviceAllocationStore } from './devices.js';
import { instanceStore } from './instances.js';
import { invitationStore } from './invitations.js';
import { organizationStore } from './organizations.js';
import { sessionStore } from './sessions.js';
import { settingStore } from './settings.js';
import { usageStore } from './usage.js';
import { userStore } from './users.js';

/** Every aggregate's prepared statements over one database. */
export function createStores(db: Db) {
  return {
    db,
    users: userStore(db),
    organizations: organizationStore(db),
    invitations: invitationStore(db),
    apiKeys: apiKeyStore(db),
    sessions: sessionStore(db),
    devices: deviceAllocationStore(db),
    instances: instanceStore(db),
    usage: usageStore(db),
    settings: settingStore(db),
  };
}

export type Stores = ReturnType<typeof createStores>;
