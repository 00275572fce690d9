import type { ApiKey, User } from '../../../../shared/api/account.js';
import { iso, isoOrNull } from '../../domain/time.js';
import type { ApiKeyRow } from '../../store/api-keys.js';
import type { UserRow } from '../../store/users.js';

/** Accounts and API keys as the API shows them: a key's secret never, only its suffix. */

export const presentUser = (u: UserRow, labOwnerId: string | undefined): User => ({
  id: u.id,
  email: u.email,
  name: u.name,
  labOwner: u.id === labOwnerId,
  createdAt: iso(u.createdAt),
});

export const presentApiKey = (k: ApiKeyRow): ApiKey => ({
  id: k.id,
  name: k.name,
  apiKeySuffix: k.suffix,
  createdAt: iso(k.createdAt),
  lastUsedAt: isoOrNull(k.lastUsedAt),
});
