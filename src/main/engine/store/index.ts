import { adbKeyStore } from './adb-keys.js';
import { apiKeyStore } from './api-keys.js';
import { chatStore } from './chats.js';
import type { Db } from './db.js';
import { deviceAllocationStore } from './devices.js';
import { fileStore } from './files.js';
import { fleetStore } from './fleet.js';
import { instanceStore } from './instances.js';
import { invitationStore } from './invitations.js';
import { macHostStore } from './mac-hosts.js';
import { organizationStore } from './organizations.js';
import { reservationStore } from './reservations.js';
import { providerStore } from './providers.js';
import { sessionStore } from './sessions.js';
import { settingStore } from './settings.js';
import { testResultStore } from './test-results.js';
import { usageStore } from './usage.js';
import { userStore } from './users.js';
import { Version } from './version.js';
import { webDriverRunStore } from './webdriver-runs.js';

/** Every aggregate's prepared statements over one database. */
export function createStores(db: Db) {
  const authVersion = new Version();
  const sessionPartsVersion = new Version();
  return {
    db,
    /** Changes with every write to accounts, organizations, memberships or keys: what authorization reads. */
    authVersion,
    /** Changes with every write to a session, its devices or instances; those stores bump it. */
    sessionPartsVersion,
    users: userStore(db, authVersion),
    organizations: organizationStore(db, authVersion),
    invitations: invitationStore(db),
    apiKeys: apiKeyStore(db, authVersion),
    sessions: sessionStore(db, sessionPartsVersion),
    devices: deviceAllocationStore(db, sessionPartsVersion),
    fleet: fleetStore(db),
    instances: instanceStore(db, sessionPartsVersion),
    macHosts: macHostStore(db, sessionPartsVersion),
    providers: providerStore(db),
    usage: usageStore(db),
    reservations: reservationStore(db),
    settings: settingStore(db),
    testResults: testResultStore(db),
    files: fileStore(db),
    chats: chatStore(db),
    adbKeys: adbKeyStore(db),
    webDriverRuns: webDriverRunStore(db),
  };
}

export type Stores = ReturnType<typeof createStores>;
