import type { FastifyRequest } from 'fastify';
import { Type } from 'typebox';
import type { WebSocket } from 'ws';
import { ErrorBody, List } from '../../../../shared/api/common.js';
import { ActionResult, DeviceActionBody, DeviceInfo, UiElement } from '../../../../shared/api/devices.js';
import { InstallBody, InstallResult } from '../../../../shared/api/files.js';
import type { DeviceControl } from '../../services/device-control.js';
import type { FeedEnd, Viewer } from '../../services/live-screen.js';
import { BEARER, OrganizationHeader, responses, scopeOf, SOCKET_QUERY, type App } from '../http.js';
import { list } from '../presenters/common.js';
import { DeviceParams } from './devices.js';

/**
 * A viewer whose socket still holds more than this much unsent data skips frames until it drains: the newest frame
 * wins, and nothing queues up behind a slow connection.
 */
const MAX_BUFFERED_BYTES = 64 * 1024;

/** How a live screen closes, so that a client can tell a released phone from a failure without parsing text. */
const CLOSE: Record<FeedEnd, [code: number, reason: string]> = {
  device_released: [4001, 'device released'],
  device_offline: [4002, 'device offline'],
  capture_failed: [1011, 'screen capture failed'],
  shutdown: [1001, 'Benchtop is shutting down'],
};

const ScreenQuery = Type.Object(SOCKET_QUERY);

/** A viewer over a WebSocket: a hello with the screen's size, then one binary message per frame. */
function socketViewer(socket: WebSocket): Viewer {
  let greeted = false;
  return {
    frame(frame) {
      if (socket.readyState !== socket.OPEN || socket.bufferedAmount > MAX_BUFFERED_BYTES) return;
      if (!greeted) {
        socket.send(JSON.stringify({ type: 'hello', width: frame.width, height: frame.height, format: frame.format }));
        greeted = true;
      }
      socket.send(frame.data);
    },
    end(why) {
      socket.close(...CLOSE[why]);
    },
  };
}

/** Driving an in_use phone of the caller's session: what the GUI's live screen and the assistant use. */
export function deviceControlRoutes(app: App, control: DeviceControl): void {
  const tags = ['Extensions'];
  const errors = [401, 403, 404, 409] as const;

  app.get('/sessions/:sessionId/devices/:deviceId/screenshot', {
    schema: { tags, operationId: 'deviceScreenshot', summary: 'The device\'s screen as PNG', security: BEARER, headers: OrganizationHeader, params: DeviceParams, response: responses({ 200: Type.Unsafe<Buffer>({ type: 'string', format: 'binary', description: 'image/png' }) }, errors) },
  }, async (req, reply) => {
    const frame = await control.screenshot(scopeOf(req), { sessionId: req.params.sessionId, serial: req.params.deviceId });
    return reply.type(`image/${frame.format}`).header('cache-control', 'no-store').send(frame.data);
  });

  app.get('/sessions/:sessionId/devices/:deviceId/elements', {
    schema: { tags, operationId: 'deviceElements', summary: 'The UI elements on screen, flattened from the hierarchy', security: BEARER, headers: OrganizationHeader, params: DeviceParams, response: responses({ 200: List(UiElement) }, errors) },
  }, async (req) => list(await control.elements(scopeOf(req), { sessionId: req.params.sessionId, serial: req.params.deviceId })));

  app.get('/sessions/:sessionId/devices/:deviceId/info', {
    schema: { tags, operationId: 'deviceInfo', summary: 'The device\'s model, OS, ABI, screen, battery and network, read from it now', security: BEARER, headers: OrganizationHeader, params: DeviceParams, response: responses({ 200: DeviceInfo }, errors) },
  }, (req) => control.info(scopeOf(req), { sessionId: req.params.sessionId, serial: req.params.deviceId }));

  app.post('/sessions/:sessionId/devices/:deviceId/actions', {
    schema: { tags, operationId: 'deviceAction', summary: 'Tap, swipe, type, press a button, launch or stop an app, open a URL, rotate', security: BEARER, headers: OrganizationHeader, params: DeviceParams, body: DeviceActionBody, response: responses({ 200: ActionResult }, [400, ...errors]) },
  }, (req) => control.act(scopeOf(req), { sessionId: req.params.sessionId, serial: req.params.deviceId }, req.body));

  app.post('/sessions/:sessionId/devices/:deviceId/install', {
    schema: { tags, operationId: 'installApp', summary: 'Install a stored file (a ready app of your organization) on an in_use device', description: 'file is a file id or file:<fileId>. An unknown or expired file is 404 file_not_found; an app of the other platform is 400 wrong_platform; a file not ready yet is 409 file_not_ready. The app is uninstalled when the device is released.', security: BEARER, headers: OrganizationHeader, params: DeviceParams, body: InstallBody, response: responses({ 200: InstallResult }, [400, ...errors]) },
  }, (req) => control.install(scopeOf(req), { sessionId: req.params.sessionId, serial: req.params.deviceId }, req.body));

  const screens = new WeakMap<FastifyRequest, ReturnType<DeviceControl['liveScreen']>>();

  // wsHandler rather than `websocket: true`, which would hide the route from the OpenAPI document; a plain GET
  // gets the HTTP handler, which explains the upgrade.
  app.route({
    method: 'GET',
    url: '/sessions/:sessionId/devices/:deviceId/screen',
    config: { tokenInQuery: true },
    schema: {
      tags,
      operationId: 'deviceScreen',
      summary: 'Live frames of the device\'s screen over a WebSocket',
      description: 'Upgrade to a WebSocket. The first message is text, {"type":"hello","width","height","format":"png"}; each ' +
        'later message is binary, one frame (a PNG). A viewer that falls behind skips frames. Closes with 4001 when the ' +
        'device is released, 4002 when it goes offline, 1011 when capture fails. A refusal is an HTTP error before the upgrade.',
      security: BEARER,
      headers: OrganizationHeader,
      querystring: ScreenQuery,
      params: DeviceParams,
      response: responses({ 101: Type.Null({ description: 'Switching to the WebSocket protocol' }), 426: ErrorBody }, errors),
    },
    // Everything that can refuse a viewer runs before the upgrade, so that a refusal is an ordinary HTTP error.
    preHandler: async (req) => {
      screens.set(req, control.liveScreen(scopeOf(req, req.query.org), { sessionId: req.params.sessionId, serial: req.params.deviceId }));
    },
    handler: (_req, reply) =>
      reply.code(426).header('upgrade', 'websocket').send({ error: { code: 'websocket_required', message: 'Open this URL as a WebSocket.' } }),
    wsHandler: (socket, req) => {
      const leave = screens.get(req)!.watch(socketViewer(socket));
      socket.on('close', leave);
    },
  });
}
