import { randomUUID } from 'node:crypto';
import { notFound } from '../domain/errors.js';
import type { ApiKeyRow } from '../store/api-keys.js';
import { requireInteractive, requireRole } from './auth.js';
import { newApiKey } from './credentials.js';
import type { Scope } from './context.js';
import type { EngineContext } from './context.js';

export function listKeys(ctx: EngineContext, scope: Scope): ApiKeyRow[] {
  requireInteractive(scope.caller);
  return ctx.stores.apiKeys.ofOrganization(scope.organization.id);
}

/** Creates a key bound to the scope's organization; the secret is returned here once and never stored. */
export function createKey(ctx: EngineContext, scope: Scope, name: string): ApiKeyRow & { apiKey: string } {
  requireInteractive(scope.caller);
  const { apiKey, secretHash, suffix } = newApiKey();
  const row = {
    id: randomUUID(),
    organizationId: scope.organization.id,
    createdBy: scope.caller.user.id,
    name: name.trim() || 'API key',
    suffix,
    createdAt: ctx.now(),
  };
  ctx.stores.apiKeys.insert({ ...row, secretHash });
  return { ...row, lastUsedAt: null, apiKey };
}

/** Any key of the organization may be deleted, not only the caller's own; read-only members may not. */
export function deleteKey(ctx: EngineContext, scope: Scope, keyId: string): void {
  requireInteractive(scope.caller);
  requireRole(scope.role, 'readwrite');
  if (!ctx.stores.apiKeys.remove(keyId, scope.organization.id)) throw notFound('API key');
}
