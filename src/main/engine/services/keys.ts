import { randomUUID } from 'node:crypto';
import { notFound } from '../domain/errors.js';
import type { ApiKeyRow } from '../store/api-keys.js';
import { requireInteractive, requireRole } from './auth.js';
import { newApiKey } from './credentials.js';
import type { Scope } from './scope.js';
import type { Stores } from '../store/index.js';
import type { Clock } from './scope.js';

export class Keys {
  constructor(
    private readonly stores: Pick<Stores, 'apiKeys'>,
    private readonly now: Clock,
  ) {}

  listKeys(scope: Scope): ApiKeyRow[] {
    requireInteractive(scope.caller);
    return this.stores.apiKeys.ofOrganization(scope.organization.id);
  }

  /** Creates a key bound to the scope's organization; the secret is returned here once and never stored. */
  createKey(scope: Scope, name: string): ApiKeyRow & { apiKey: string } {
    requireInteractive(scope.caller);
    const { apiKey, secretHash, suffix } = newApiKey();
    const row = {
      id: randomUUID(),
      organizationId: scope.organization.id,
      createdBy: scope.caller.user.id,
      name: name.trim() || 'API key',
      suffix,
      createdAt: this.now(),
    };
    this.stores.apiKeys.insert({ ...row, secretHash });
    return { ...row, lastUsedAt: null, apiKey };
  }

  /** Deletes the API keys a member created for an organization: they leave it, and so do their keys. */
  deleteKeysOf(organizationId: string, userId: string): number {
    const { apiKeys } = this.stores;
    const theirs = apiKeys.ofOrganization(organizationId).filter((key) => key.createdBy === userId);
    for (const key of theirs) apiKeys.remove(key.id, organizationId);
    return theirs.length;
  }

  /** Any key of the organization may be deleted, not only the caller's own; read-only members may not. */
  deleteKey(scope: Scope, keyId: string): void {
    requireInteractive(scope.caller);
    requireRole(scope.role, 'readwrite');
    if (!this.stores.apiKeys.remove(keyId, scope.organization.id)) throw notFound('API key');
  }
}
