import { Type } from 'typebox';
import { List, Uuid } from '../../../../shared/api/common.js';
import { CreateInstanceBody, ExecBody, ExecResult } from '../../../../shared/api/instances.js';
import { Instance } from '../../../../shared/api/sessions.js';
import type { EngineContext } from '../../services/context.js';
import { BEARER, OrganizationHeader, responses, scopeOf, type App } from '../http.js';
import { list, presentInstance } from '../present.js';

const SessionParams = Type.Object({ sessionId: Uuid });
export const InstanceParams = Type.Object({ sessionId: Uuid, instanceId: Uuid });

export function instanceRoutes(app: App, ctx: EngineContext): void {
  const tags = ['Instances'];

  app.get('/sessions/:sessionId/instances', {
    schema: { tags, operationId: 'listInstances', summary: 'The session\'s instances, newest first', security: BEARER, headers: OrganizationHeader, params: SessionParams, response: responses({ 200: List(Instance) }, [401, 403, 404]) },
  }, (req) => list(ctx.instances.list(scopeOf(ctx, req), req.params.sessionId).map(presentInstance)));

  app.post('/sessions/:sessionId/instances', {
    schema: { tags, operationId: 'allocateInstance', summary: 'Allocate a macOS instance; it answers provisioning at once, poll until ready', security: BEARER, headers: OrganizationHeader, params: SessionParams, body: CreateInstanceBody, response: responses({ 201: Instance }, [400, 401, 403, 404, 409]) },
  }, (req, reply) => reply.code(201).send(presentInstance(ctx.instances.create(scopeOf(ctx, req), req.params.sessionId, req.body))));

  app.get('/sessions/:sessionId/instances/:instanceId', {
    schema: { tags, operationId: 'getInstance', summary: 'An instance of the session', security: BEARER, headers: OrganizationHeader, params: InstanceParams, response: responses({ 200: Instance }, [401, 403, 404]) },
  }, (req) => presentInstance(ctx.instances.get(scopeOf(ctx, req), req.params.sessionId, req.params.instanceId)));

  app.post('/sessions/:sessionId/instances/:instanceId/release', {
    schema: { tags, operationId: 'releaseInstance', summary: 'Release an instance: billing stops, teardown runs afterwards', security: BEARER, headers: OrganizationHeader, params: InstanceParams, response: responses({ 202: Instance }, [401, 403, 404]) },
  }, (req, reply) => reply.code(202).send(presentInstance(ctx.instances.release(scopeOf(ctx, req), req.params.sessionId, req.params.instanceId))));

  app.post('/sessions/:sessionId/instances/:instanceId/exec', {
    schema: { tags: ['Extensions'], operationId: 'execInInstance', summary: 'Run a command on a ready instance and answer its exit code and output', security: BEARER, headers: OrganizationHeader, params: InstanceParams, body: ExecBody, response: responses({ 200: ExecResult }, [400, 401, 403, 404, 409]) },
  }, (req) => ctx.instances.exec(scopeOf(ctx, req), req.params.sessionId, req.params.instanceId, req.body));
}
