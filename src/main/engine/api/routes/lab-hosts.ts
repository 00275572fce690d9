import { Type } from 'typebox';
import { List } from '../../../../shared/api/common.js';
import { CreateMacHostBody, HostIdParams, MacHost, UpdateMacHostBody } from '../../../../shared/api/mac-hosts.js';
import type { MacHosts, MacHostView } from '../../services/mac-hosts.js';
import { BEARER, callerOf, responses, type App } from '../http.js';
import { list } from '../presenters/common.js';
import { presentMacHost } from '../presenters/fleet.js';

/** The lab's Mac hosts: lab administration, for the lab owner with an interactive token. Secrets are write-only. */
export function labHostRoutes(app: App, macHosts: MacHosts): void {
  const tags = ['Extensions'];
  const present = ({ host, health }: MacHostView) => presentMacHost(host, health);

  app.get('/lab/hosts', {
    schema: { tags, operationId: 'listLabHosts', summary: 'The lab\'s Mac hosts (lab owner)', security: BEARER, response: responses({ 200: List(MacHost) }, [401, 403]) },
  }, (req) => list(macHosts.list(callerOf(req)).map(present)));

  app.post('/lab/hosts', {
    schema: { tags, operationId: 'addLabHost', summary: 'Add a Mac host (lab owner); it is checked over SSH at once', security: BEARER, body: CreateMacHostBody, response: responses({ 201: MacHost }, [400, 401, 403, 409]) },
  }, async (req, reply) => reply.code(201).send(present(await macHosts.create(callerOf(req), req.body))));

  app.get('/lab/hosts/:hostId', {
    schema: { tags, operationId: 'getLabHost', summary: 'A Mac host (lab owner)', security: BEARER, params: HostIdParams, response: responses({ 200: MacHost }, [401, 403, 404]) },
  }, (req) => present(macHosts.get(callerOf(req), req.params.hostId)));

  app.patch('/lab/hosts/:hostId', {
    schema: { tags, operationId: 'updateLabHost', summary: 'Change a Mac host (lab owner); only the fields given change', security: BEARER, params: HostIdParams, body: UpdateMacHostBody, response: responses({ 200: MacHost }, [400, 401, 403, 404, 409]) },
  }, async (req) => present(await macHosts.update(callerOf(req), req.params.hostId, req.body)));

  app.delete('/lab/hosts/:hostId', {
    schema: { tags, operationId: 'removeLabHost', summary: 'Remove a Mac host and its stored credentials (lab owner)', security: BEARER, params: HostIdParams, response: responses({ 204: Type.Null() }, [401, 403, 404, 409]) },
  }, async (req, reply) => {
    await macHosts.remove(callerOf(req), req.params.hostId);
    return reply.code(204).send();
  });
}
