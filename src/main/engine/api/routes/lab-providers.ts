import { Type } from 'typebox';
import { List } from '../../../../shared/api/common.js';
import { BackupResult, CreateProviderBody, Provider, ProviderHostKey, ProviderHostKeyBody, ProviderIdParams, UpdateProviderBody } from '../../../../shared/api/providers.js';
import type { Backups } from '../../services/backups.js';
import type { LabOwner } from '../../services/lab-owner.js';
import type { Metrics } from '../../services/metrics.js';
import type { Providers } from '../../services/providers.js';
import { BEARER, callerOf, responses, type App } from '../http.js';
import { served } from '../media.js';
import { list } from '../presenters/common.js';
import { presentProvider } from '../presenters/providers.js';
import { iso } from '../../domain/time.js';

/** Providers, metrics and backups: lab administration, for the lab owner with an interactive token. */
export function labProviderRoutes(app: App, providers: Providers, metrics: Metrics, backups: Backups, labOwner: LabOwner): void {
  const tags = ['Extensions'];

  app.get('/lab/providers', {
    schema: { tags, operationId: 'listLabProviders', summary: 'The lab\'s providers: other boxes whose phones join the fleet over SSH (lab owner)', security: BEARER, response: responses({ 200: List(Provider) }, [401, 403]) },
  }, (req) => list(providers.list(callerOf(req)).map(presentProvider)));

  app.post('/lab/providers/host-key', {
    schema: { tags, operationId: 'readLabProviderHostKey', summary: 'The host key a provider\'s sshd presents, to confirm before adding it (lab owner); nothing is stored or trusted. 400 provider_unreachable when no sshd answers', security: BEARER, body: ProviderHostKeyBody, response: responses({ 200: ProviderHostKey }, [400, 401, 403]) },
  }, async (req) => {
    const port = req.body.port ?? 22;
    return { address: req.body.address, port, hostKeySha256: await providers.hostKey(callerOf(req), req.body.address, port) };
  });

  app.post('/lab/providers', {
    schema: { tags, operationId: 'addLabProvider', summary: 'Add a provider (lab owner); it is checked at once. 400 provider_unreachable when no sshd answers, 409 host_key_mismatch when its host key is not hostKeySha256: a refused add stores nothing', security: BEARER, body: CreateProviderBody, response: responses({ 201: Provider }, [400, 401, 403, 409]) },
  }, async (req, reply) => reply.code(201).send(presentProvider(await providers.create(callerOf(req), req.body))));

  app.get('/lab/providers/:providerId', {
    schema: { tags, operationId: 'getLabProvider', summary: 'A provider (lab owner)', security: BEARER, params: ProviderIdParams, response: responses({ 200: Provider }, [401, 403, 404]) },
  }, (req) => presentProvider(providers.get(callerOf(req), req.params.providerId)));

  app.patch('/lab/providers/:providerId', {
    schema: { tags, operationId: 'updateLabProvider', summary: 'Change or pause a provider (lab owner); only the fields given change', security: BEARER, params: ProviderIdParams, body: UpdateProviderBody, response: responses({ 200: Provider }, [400, 401, 403, 404, 409]) },
  }, async (req) => presentProvider(await providers.update(callerOf(req), req.params.providerId, req.body)));

  app.delete('/lab/providers/:providerId', {
    schema: { tags, operationId: 'removeLabProvider', summary: 'Remove a provider and its stored credentials (lab owner); 409 while one of its phones is held', security: BEARER, params: ProviderIdParams, response: responses({ 204: Type.Null() }, [401, 403, 404, 409]) },
  }, async (req, reply) => {
    await providers.remove(callerOf(req), req.params.providerId);
    return reply.code(204).send();
  });

  app.get('/metrics', {
    schema: { tags, operationId: 'getMetrics', summary: 'The lab in Prometheus text format (lab owner)', security: BEARER, response: responses({ 200: served<string>(['text/plain'], 'Prometheus\' text exposition format (text/plain; version=0.0.4).', { type: 'string' }) }, [401, 403]) },
  }, async (req, reply) => {
    labOwner.require(callerOf(req));
    const { contentType, text } = await metrics.scrape();
    return reply.type(contentType).send(text);
  });

  app.post('/lab/backup', {
    schema: { tags, operationId: 'backupLab', summary: 'An online backup of the lab\'s database and blobs now (lab owner), as the schedule takes them', security: BEARER, response: responses({ 201: BackupResult }, [401, 403]) },
  }, async (req, reply) => {
    labOwner.require(callerOf(req));
    const backup = await backups.take();
    return reply.code(201).send({ dir: backup.dir, path: backup.path, bytes: backup.bytes, createdAt: iso(backup.createdAt) });
  });
}
