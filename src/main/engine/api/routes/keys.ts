import { Type } from 'typebox';
import { ApiKey, CreateApiKeyBody, CreatedApiKey } from '../../../../shared/api/account.js';
import { List, Uuid } from '../../../../shared/api/common.js';
import type { EngineContext } from '../../services/context.js';
import { createKey, deleteKey, listKeys } from '../../services/keys.js';
import { BEARER, OrganizationHeader, responses, scopeOf, type App } from '../http.js';
import { presentApiKey } from '../presenters/account.js';
import { list } from '../presenters/common.js';

export function keyRoutes(app: App, ctx: EngineContext): void {
  const tags = ['API Keys'];

  app.get('/keys', {
    schema: { tags, operationId: 'listKeys', summary: 'List the organization\'s API keys (secrets omitted)', security: BEARER, headers: OrganizationHeader, response: responses({ 200: List(ApiKey) }, [401, 403]) },
  }, (req) => list(listKeys(ctx, scopeOf(req)).map(presentApiKey)));

  app.post('/keys', {
    schema: { tags, operationId: 'createKey', summary: 'Create an API key; the secret is in apiKey, once', security: BEARER, headers: OrganizationHeader, body: CreateApiKeyBody, response: responses({ 201: CreatedApiKey }, [400, 401, 403]) },
  }, (req, reply) => {
    const key = createKey(ctx, scopeOf(req), req.body.name);
    return reply.code(201).send({ ...presentApiKey(key), apiKey: key.apiKey });
  });

  app.delete('/keys/:id', {
    schema: { tags, operationId: 'deleteKey', summary: 'Delete any API key of the organization', security: BEARER, headers: OrganizationHeader, params: Type.Object({ id: Uuid }), response: responses({ 204: Type.Null() }, [401, 403, 404]) },
  }, (req, reply) => {
    deleteKey(ctx, scopeOf(req), req.params.id);
    return reply.code(204).send();
  });
}
