import { connect } from 'node:net';
import { Type } from 'typebox';
import { ErrorBody } from '../../../../shared/api/common.js';
import { List, Uuid } from '../../../../shared/api/common.js';
import { AdbKey, CreateAdbKeyBody, RemoteConnect, RemoteConnectBody } from '../../../../shared/api/remote-connect.js';
import { notFound } from '../../domain/errors.js';
import type { RemoteConnect as RemoteConnectService } from '../../services/remote-connect.js';
import { BEARER, callerOf, OrganizationHeader, responses, scopeOf, type App } from '../http.js';
import { served } from '../media.js';
import { list } from '../presenters/common.js';
import { readerOrigin } from '../reader-origin.js';
import { presentAdbKey, presentRemoteConnect } from '../presenters/remote-connect.js';
import { TUNNEL_CLIENT_SOURCE } from '../remote-tunnel-client.js';
import { DeviceParams } from './devices.js';

/** A tunnel whose WebSocket still holds more than this unsent pauses its TCP side until it drains. */
const TUNNEL_BUFFER = 1024 * 1024;

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
      if (req.body === undefined) req.body = {};
    },
  }, async (req, reply) => {
    const { created, view } = await remote.open(scopeOf(req), target(req.params), req.body, readerOrigin(req));
    return reply.code(created ? 201 : 200).send(presentRemoteConnect(view, false));
  });

  app.get(path, {
    schema: { tags, operationId: 'getRemoteConnect', summary: 'The phone\'s open remote connection and who is connected', security: BEARER, headers: OrganizationHeader, params: DeviceParams, response: responses({ 200: RemoteConnect }, [401, 403, 404, 409]) },
  }, (req) => presentRemoteConnect(remote.get(scopeOf(req), target(req.params), readerOrigin(req)), true));

  app.delete(path, {
    schema: { tags, operationId: 'closeRemoteConnect', summary: 'Close the remote connection: connected tools see the phone go offline', security: BEARER, headers: OrganizationHeader, params: DeviceParams, response: responses({ 204: Type.Null() }, [401, 403, 404, 409]) },
  }, (req, reply) => {
    remote.close(scopeOf(req), target(req.params));
    return reply.code(204).send();
  });

  // Over LAN sharing: the local end's script, and the tunnel it opens. Both are public: the tunnel's credential is the
  // per-checkout secret in its path, which only the holder was shown, and which dies with the checkout.
  app.get('/remote-connect/client.cjs', {
    config: { public: true },
    schema: { tags, operationId: 'remoteConnectClient', summary: 'The tunnel client a teammate runs with Node (see lanCommand)', response: { 200: served<string>(['application/javascript'], 'The script, CommonJS for Node.', { type: 'string' }) } },
  }, async (_req, reply) => {
    reply.type('application/javascript; charset=utf-8');
    return TUNNEL_CLIENT_SOURCE;
  });

  const TunnelParams = Type.Object({ secret: Type.String({ minLength: 16, maxLength: 64 }) });
  const TunnelQuery = Type.Object({ port: Type.Optional(Type.Integer({ minimum: 0, maximum: 1, description: '0: adb or usbmuxd; 1: the iPhone\'s WebDriverAgent' })) });
  const targets = new WeakMap<object, { host: string; port: number }>();
  app.route({
    method: 'GET',
    url: '/remote-connect/tunnel/:secret',
    config: { public: true },
    schema: {
      tags,
      operationId: 'remoteConnectTunnel',
      summary: 'A WebSocket carrying one TCP connection to a checkout\'s remote-connect listener (LAN sharing)',
      description: 'Upgrade to a WebSocket; binary messages both ways are the bytes of one connection to the listener. 404 for a secret of no open checkout.',
      params: TunnelParams,
      querystring: TunnelQuery,
      response: responses({ 101: Type.Null({ description: 'Switching to the WebSocket protocol' }), 426: ErrorBody }, [404]),
    },
    preHandler: async (req) => {
      const target = remote.tunnelTarget(req.params.secret, req.query.port ?? 0);
      if (!target) throw notFound('remote connection');
      targets.set(req, target);
    },
    handler: (_req, reply) =>
      reply.code(426).header('upgrade', 'websocket').send({ error: { code: 'websocket_required', message: 'Open this URL as a WebSocket.' } }),
    wsHandler: (socket, req) => {
      const target = targets.get(req)!;
      const tcp = connect({ host: target.host, port: target.port, noDelay: true });
      tcp.on('data', (chunk: Buffer) => {
        socket.send(chunk);
        if (socket.bufferedAmount > TUNNEL_BUFFER) {
          tcp.pause();
          const drained = setInterval(() => {
            if (socket.bufferedAmount > TUNNEL_BUFFER && socket.readyState === socket.OPEN) return;
            clearInterval(drained);
            tcp.resume();
          }, 5);
        }
      });
      socket.on('message', (data: Buffer) => tcp.write(data));
      tcp.on('error', () => socket.close(1011, 'the listener closed'));
      tcp.on('close', () => socket.close(1000, 'closed'));
      socket.on('close', () => tcp.destroy());
    },
  });
}
