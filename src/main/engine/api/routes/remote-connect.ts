import { Type } from 'typebox';
import { List, Uuid } from '../../../../shared/api/common.js';
import { AdbKey, CreateAdbKeyBody, RemoteConnect, RemoteConnectBody } from '../../../../shared/api/remote-connect.js';
import type { RemoteConnect as RemoteConnectService } from '../../services/remote-connect.js';
import { BEARER, callerOf, OrganizationHeader, responses, scopeOf, type App } from '../http.js';
import { list } from '../presenters/common.js';
import { presentAdbKey, presentRemoteConnect } from '../presenters/remote-connect.js';
import { DeviceParams } from './devices.js';

/** A user's adb keys, and the remote connection of a held phone: the user's own tools (adb, libimobiledevice) on it. */
export function remoteConnectRoutes(app: App, remote: RemoteConnectService): void {
  const tags = ['Extensions'];

  app.get('/adb-keys', {
    schema: { tags, operationId: 'listAdbKeys', summary: 'Your adb public keys, which remote connect lets in', security: BEARER, response: responses({ 200: List(AdbKey) }, [401]) },
  }, (req) => list(remote.listKeys(callerOf(req)).map(presentAdbKey)));

  app.post('/adb-keys', {
    schema: { tags, operationId: 'addAdbKey', summary: 'Add an adb public key (the text of ~/.android/adbkey.pub)', security: BEARER, body: CreateAdbKeyBody, response: responses({ 201: AdbKey }, [400, 401, 409]) },
  }, (req, reply) => reply.code(201).send(presentAdbKey(remote.addKey(callerOf(req), req.body))));

  app.delete('/adb-keys/:id', {
    schema: { tags, operationId: 'deleteAdbKey', summary: 'Delete one of your adb keys', security: BEARER, params: Type.Object({ id: Uuid }), response: responses({ 204: Type.Null() }, [401, 404]) },
  }, (req, reply) => {
    remote.deleteKey(callerOf(req), req.params.id);
    return reply.code(204).send();
  });

  const path = '/sessions/:sessionId/devices/:deviceId/remote-connect';
  const target = (params: { sessionId: string; deviceId: string }) => ({ sessionId: params.sessionId, serial: params.deviceId });

  app.post(path, {
    schema: { tags, operationId: 'openRemoteConnect', summary: 'Open the held phone to your own tools: `adb connect` (Android) or a private usbmuxd (iPhone); 200 when already open', security: BEARER, headers: OrganizationHeader, params: DeviceParams, description: 'The body is optional.', body: RemoteConnectBody, response: responses({ 200: RemoteConnect, 201: RemoteConnect }, [400, 401, 403, 404, 409]) },
    // No body is an empty one: most callers have registered their key and send nothing.
    preValidation: async (req) => {
      req.body ??= {};
    },
  }, async (req, reply) => {
    const { created, view } = await remote.open(scopeOf(req), target(req.params), req.body);
    return reply.code(created ? 201 : 200).send(presentRemoteConnect(view, false));
  });

  app.get(path, {
    schema: { tags, operationId: 'getRemoteConnect', summary: 'The phone\'s open remote connection and who is connected', security: BEARER, headers: OrganizationHeader, params: DeviceParams, response: responses({ 200: RemoteConnect }, [401, 403, 404, 409]) },
  }, (req) => presentRemoteConnect(remote.get(scopeOf(req), target(req.params)), true));

  app.delete(path, {
    schema: { tags, operationId: 'closeRemoteConnect', summary: 'Close the remote connection: connected tools see the phone go offline', security: BEARER, headers: OrganizationHeader, params: DeviceParams, response: responses({ 204: Type.Null() }, [401, 403, 404, 409]) },
  }, (req, reply) => {
    remote.close(scopeOf(req), target(req.params));
    return reply.code(204).send();
  });
}
