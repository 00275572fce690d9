import { Type } from 'typebox';
import type { RawData, WebSocket } from 'ws';
import { ErrorBody } from '../../../../shared/api/common.js';
import { BEARER, OrganizationHeader, responses, scopeOf, SOCKET_QUERY, type App } from '../http.js';
import { RPC_ERRORS, RpcDispatcher, RpcError } from './jsonrpc.js';
import { wsMethods, type RpcCall, type WsServices } from './methods.js';

export const WS_PATH = '/ws';

/** Calls one socket may have running at once; past it a call is refused, not queued, so nothing piles up. */
const MAX_IN_FLIGHT = 64;

const WsQuery = Type.Object(SOCKET_QUERY);

/**
 * GET /ws: the Mobile Next fleet's JSON-RPC 2.0 over a WebSocket, on the same origin as /api/v1 (so wss:// on the
 * LAN port). Authentication and organization are REST's, checked before the upgrade: a refusal is an HTTP 401/403.
 */
export function wsRpcRoute(app: App, services: WsServices): void {
  const dispatcher = new RpcDispatcher<RpcCall>(wsMethods(services), (error) => app.log.error({ err: error }, '/ws call failed'));

  app.route({
    method: 'GET',
    url: WS_PATH,
    config: { tokenInQuery: true },
    schema: {
      tags: ['Extensions'],
      operationId: 'fleetJsonRpc',
      summary: 'The Mobile Next fleet\'s JSON-RPC 2.0 over a WebSocket',
      description: 'Upgrade to a WebSocket, then send JSON-RPC 2.0 requests as text messages; many may be in flight. ' +
        'Methods: fleet.listDevices, fleet.allocate, fleet.release, devices.list, device.list, device.info, device.screenshot, ' +
        'device.dump.ui, device.io.tap|longpress|swipe|gesture|text|keys|button, device.io.orientation.get|set, device.url, ' +
        'device.apps.launch|terminate|uninstall|list|foreground, device.crashes.list|get, device.reboot. device.* take ' +
        'deviceId, the serial. Errors: -32020 device not allocated, -32022 no matching device, -32601, -32602, -32600, -32700.',
      security: BEARER,
      headers: OrganizationHeader,
      querystring: WsQuery,
      response: responses({ 101: Type.Null({ description: 'Switching to the WebSocket protocol' }), 426: ErrorBody }, [401, 403]),
    },
    // The organization is chosen as in REST, and a caller who may not act in it is refused before the upgrade.
    preHandler: async (req) => {
      scopeOf(req, req.query.org);
    },
    handler: (_req, reply) =>
      reply.code(426).header('upgrade', 'websocket').send({ error: { code: 'websocket_required', message: 'Open this URL as a WebSocket.' } }),
    wsHandler: (socket: WebSocket, req) => {
      const closed = new AbortController();
      const org = req.query.org;
      const call: RpcCall = { scope: () => scopeOf(req, org), signal: closed.signal };
      let inFlight = 0;
      const send = (reply: string | undefined) => {
        if (reply !== undefined && socket.readyState === socket.OPEN) socket.send(reply);
      };
      socket.on('message', (data: RawData, isBinary: boolean) => {
        const text = isBinary ? '\0' : Buffer.isBuffer(data) ? data.toString('utf8') : Buffer.concat(data as Buffer[]).toString('utf8');
        if (inFlight >= MAX_IN_FLIGHT) {
          const id = /"id"\s*:\s*("(?:[^"\\]|\\.)*"|-?\d+)/.exec(text)?.[1];
          const error = new RpcError(RPC_ERRORS.serverError, `Too many calls in flight on this socket (${MAX_IN_FLIGHT}); wait for some to finish.`);
          return send(JSON.stringify({ jsonrpc: '2.0', id: id === undefined ? null : JSON.parse(id), error: { code: error.code, message: error.message } }));
        }
        inFlight++;
        void dispatcher
          .message(text, call)
          .then(send, (error: unknown) => app.log.error({ err: error }, '/ws message failed'))
          .finally(() => inFlight--);
      });
      socket.on('close', () => closed.abort());
    },
  });
}
