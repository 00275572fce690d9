import { Type } from 'typebox';
import { List, Uuid } from '../../../../shared/api/common.js';
import { AllocateDeviceBody } from '../../../../shared/api/devices.js';
import { Device } from '../../../../shared/api/sessions.js';
import type { DeviceAllocator } from '../../services/devices.js';
import { BEARER, OrganizationHeader, responses, scopeOf, type App } from '../http.js';
import { list } from '../presenters/common.js';
import { presentDevice } from '../presenters/sessions.js';

const SessionParams = Type.Object({ sessionId: Uuid });
/** deviceId is the phone's own serial (a UDID on iOS), as in info.serial; a queued allocation's id also works. */
export const DeviceParams = Type.Object({ sessionId: Uuid, deviceId: Type.String({ minLength: 1, maxLength: 200 }) });

export function deviceRoutes(app: App, allocator: DeviceAllocator): void {
  const tags = ['Devices'];

  app.get('/sessions/:sessionId/devices', {
    schema: { tags, operationId: 'listDevices', summary: 'The session\'s devices, newest first', security: BEARER, headers: OrganizationHeader, params: SessionParams, response: responses({ 200: List(Device) }, [401, 403, 404]) },
  }, (req) => list(allocator.list(scopeOf(req), req.params.sessionId).map(presentDevice)));

  app.post('/sessions/:sessionId/devices', {
    schema: { tags, operationId: 'allocateDevice', summary: 'Allocate a device matching the filters: provisioning, or queued when every match is busy', security: BEARER, headers: OrganizationHeader, params: SessionParams, body: AllocateDeviceBody, response: responses({ 201: Device }, [400, 401, 403, 404, 409]) },
  }, (req, reply) => reply.code(201).send(presentDevice(allocator.allocate(scopeOf(req), req.params.sessionId, req.body))));

  app.get('/sessions/:sessionId/devices/:deviceId', {
    schema: { tags, operationId: 'getDevice', summary: 'A device of the session, by its serial', security: BEARER, headers: OrganizationHeader, params: DeviceParams, response: responses({ 200: Device }, [401, 403, 404]) },
  }, (req) => presentDevice(allocator.find(scopeOf(req), req.params.sessionId, req.params.deviceId)));

  app.post('/sessions/:sessionId/devices/:deviceId/release', {
    schema: { tags, operationId: 'releaseDevice', summary: 'Release a device; cleanup runs afterwards and the device returns to the pool', security: BEARER, headers: OrganizationHeader, params: DeviceParams, response: responses({ 202: Device }, [401, 403, 404]) },
  }, (req, reply) => reply.code(202).send(presentDevice(allocator.release(scopeOf(req), req.params.sessionId, req.params.deviceId))));
}
