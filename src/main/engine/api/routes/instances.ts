import type { FastifyRequest } from 'fastify';
import { Type } from 'typebox';
import type { WebSocket } from 'ws';
import { ErrorBody, List, Uuid } from '../../../../shared/api/common.js';
import { CreateInstanceBody, ExecBody, ExecResult } from '../../../../shared/api/instances.js';
import { Instance } from '../../../../shared/api/sessions.js';
import type { InstanceManager } from '../../services/instances.js';
import { MAX_TERMINAL_SIDE, type SharedTerminal, type TerminalEnd, type TerminalSize, type TerminalViewer } from '../../services/terminals.js';
import { BEARER, OrganizationHeader, responses, scopeOf, SOCKET_QUERY, type App } from '../http.js';
import { list } from '../presenters/common.js';
import { presentInstance } from '../presenters/sessions.js';

const SessionParams = Type.Object({ sessionId: Uuid });
export const InstanceParams = Type.Object({ sessionId: Uuid, instanceId: Uuid });

/** How a terminal closes, so that a client can tell a released instance from a lost one without parsing text. */
const CLOSE: Record<TerminalEnd, [code: number, reason: string]> = {
  shell_exited: [1000, 'shell exited'],
  instance_released: [4001, 'instance released'],
  connection_lost: [1011, 'connection to the instance lost'],
  fell_behind: [4008, 'viewer fell behind'],
  shutdown: [1001, 'Benchtop is shutting down'],
};

const Side = (what: string, fallback: number) =>
  Type.Optional(Type.Integer({ minimum: 1, maximum: MAX_TERMINAL_SIDE, default: fallback, description: `${what} of a new shell; a running one keeps its size until resized.` }));

const TerminalQuery = Type.Object({
  ...SOCKET_QUERY,
  cols: Side('Columns', 80),
  rows: Side('Rows', 24),
  name: Type.Optional(Type.String({ pattern: '^[A-Za-z0-9_.-]{1,64}$', default: 'main', description: 'Viewers that give the same name share one shell: tabs give different names.' })),
});

/** A replied control error is dropped for a client that does not read: it must not queue up behind its output. */
export const MAX_CONTROL_BACKLOG = 64 * 1024;

/** A text message from the client: a resize, or why it is not one. */
export function resizeOf(text: string): TerminalSize | string {
  let message: unknown;
  try {
    message = JSON.parse(text);
  } catch {
    return 'A text message must be JSON, such as {"type":"resize","cols":120,"rows":40}; keystrokes go as binary messages.';
  }
  const { type, cols, rows } = (typeof message === 'object' && message !== null ? message : {}) as Record<string, unknown>;
  if (type !== 'resize') return `Unknown control message type ${JSON.stringify(type) ?? 'none'}; the one known type is "resize".`;
  const side = (n: unknown): n is number => Number.isInteger(n) && (n as number) >= 1 && (n as number) <= MAX_TERMINAL_SIDE;
  if (!side(cols) || !side(rows)) return `cols and rows must be integers from 1 to ${MAX_TERMINAL_SIDE}.`;
  return { cols, rows };
}

/** A viewer over a WebSocket: output as binary messages, the shell's size as a text message. */
function socketViewer(socket: WebSocket): TerminalViewer {
  return {
    output: (data, flushed) => socket.send(data, { binary: true }, () => flushed()),
    size: (size) => socket.send(JSON.stringify({ type: 'size', ...size })),
    end: (why) => socket.close(...CLOSE[why]),
  };
}

export function instanceRoutes(app: App, instances: InstanceManager): void {
  const tags = ['Instances'];

  app.get('/sessions/:sessionId/instances', {
    schema: { tags, operationId: 'listInstances', summary: 'The session\'s instances, newest first', security: BEARER, headers: OrganizationHeader, params: SessionParams, response: responses({ 200: List(Instance) }, [401, 403, 404]) },
  }, (req) => list(instances.list(scopeOf(req), req.params.sessionId).map(presentInstance)));

  app.post('/sessions/:sessionId/instances', {
    schema: { tags, operationId: 'allocateInstance', summary: 'Allocate a macOS instance; it answers provisioning at once, poll until ready', security: BEARER, headers: OrganizationHeader, params: SessionParams, body: CreateInstanceBody, response: responses({ 201: Instance }, [400, 401, 403, 404, 409]) },
  }, (req, reply) => reply.code(201).send(presentInstance(instances.create(scopeOf(req), req.params.sessionId, req.body))));

  app.get('/sessions/:sessionId/instances/:instanceId', {
    schema: { tags, operationId: 'getInstance', summary: 'An instance of the session', security: BEARER, headers: OrganizationHeader, params: InstanceParams, response: responses({ 200: Instance }, [401, 403, 404]) },
  }, (req) => presentInstance(instances.get(scopeOf(req), req.params.sessionId, req.params.instanceId)));

  app.post('/sessions/:sessionId/instances/:instanceId/release', {
    schema: { tags, operationId: 'releaseInstance', summary: 'Release an instance: billing stops, teardown runs afterwards', security: BEARER, headers: OrganizationHeader, params: InstanceParams, response: responses({ 202: Instance }, [401, 403, 404]) },
  }, (req, reply) => reply.code(202).send(presentInstance(instances.release(scopeOf(req), req.params.sessionId, req.params.instanceId))));

  app.post('/sessions/:sessionId/instances/:instanceId/exec', {
    schema: { tags: ['Extensions'], operationId: 'execInInstance', summary: 'Run a command on a ready instance and answer its exit code and output', security: BEARER, headers: OrganizationHeader, params: InstanceParams, body: ExecBody, response: responses({ 200: ExecResult }, [400, 401, 403, 404, 409]) },
  }, (req) => instances.exec(scopeOf(req), req.params.sessionId, req.params.instanceId, req.body));

  const opened = new WeakMap<FastifyRequest, SharedTerminal>();
  // The same shape as the device live screen: wsHandler keeps the route in the OpenAPI document, and every refusal is
  // an HTTP error before the upgrade.
  app.route({
    method: 'GET',
    url: '/sessions/:sessionId/instances/:instanceId/terminal',
    config: { tokenInQuery: true },
    schema: {
      tags: ['Extensions'],
      operationId: 'instanceTerminal',
      summary: 'An interactive shell (a PTY, xterm-256color) on a ready instance, over a WebSocket',
      description: 'Upgrade to a WebSocket. Binary messages carry raw bytes both ways: keystrokes in, output out (64 KiB at most ' +
        'per message). Text messages are JSON control: the client sends {"type":"resize","cols","rows"}; the server sends ' +
        '{"type":"size","cols","rows"} on connecting and after any resize, and {"type":"error","message"} for a control ' +
        'message it cannot use. Viewers of the same instance and name share one shell; each (re)connecting one first ' +
        'gets the last 64 KiB of output. The shell outlives its last viewer by BENCHTOP_TERMINAL_IDLE_SECONDS. Closes ' +
        'with 4001 when the instance is released or fails, 1000 when the shell exits, 1011 when the instance is lost, ' +
        '4008 when this viewer has read nothing for 30 s while the shell waited for it. A refusal is an HTTP error before the upgrade.',
      security: BEARER,
      headers: OrganizationHeader,
      querystring: TerminalQuery,
      params: InstanceParams,
      response: responses({ 101: Type.Null({ description: 'Switching to the WebSocket protocol' }), 426: ErrorBody }, [400, 401, 403, 404, 409]),
    },
    preHandler: async (req) => {
      // A plain GET is answered 426 below: it opens no shell.
      if (!req.ws) return;
      const { cols = 80, rows = 24, name = 'main' } = req.query;
      const scope = scopeOf(req, req.query.org);
      opened.set(req, await instances.terminal(scope, req.params.sessionId, req.params.instanceId, name, { cols, rows }));
    },
    handler: (_req, reply) =>
      reply.code(426).header('upgrade', 'websocket').send({ error: { code: 'websocket_required', message: 'Open this URL as a WebSocket.' } }),
    wsHandler: (socket, req) => {
      const seat = opened.get(req)!.join(socketViewer(socket));
      socket.on('message', (data: Buffer, binary: boolean) => {
        if (binary) {
          if (!seat.input(data, () => socket.resume())) socket.pause();
          return;
        }
        const size = resizeOf(data.toString());
        if (typeof size !== 'string') seat.resize(size);
        else if (socket.bufferedAmount < MAX_CONTROL_BACKLOG) socket.send(JSON.stringify({ type: 'error', message: size }));
      });
      socket.on('close', () => seat.leave());
    },
  });
}
