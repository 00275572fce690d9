import type { Server } from '@modelcontextprotocol/sdk/server/index.js';
import type { WebStandardStreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js';
import { Readable } from 'node:stream';
import type { ReadableStream as WebReadableStream } from 'node:stream/web';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Membership } from '../../services/membership.js';
import type { Caller } from '../../services/scope.js';
import { callerOf, scopeOf, type App } from '../http.js';
import type { McpLab } from './lab.js';
import type { ScopeAuth } from './server.js';

export const MCP_PATH = '/mcp';
const SESSION_HEADER = 'mcp-session-id';
/** A session nobody used for this long is closed: an agent that went away does not hold memory forever. */
const IDLE_MS = 60 * 60 * 1000;
const SWEEP_MS = 5 * 60 * 1000;
/** A body that is not JSON: the transport's parse error, in JSON-RPC terms. */
const PARSE_ERROR = Symbol('parse error');
/** /mcp is not an operation of the API: the OpenAPI document leaves it out (docs/mcp.md documents it). */
const HIDDEN = { schema: { hide: true } };
/** The request headers the SDK's Streamable HTTP transport reads (content negotiation, the session, resumption). */
const TRANSPORT_HEADERS = ['accept', 'content-type', 'mcp-session-id', 'mcp-protocol-version', 'last-event-id'] as const;
/** JSON-RPC's code for a body that is not JSON. */
const PARSE_ERROR_CODE = -32700;

/**
 * The MCP SDK (and the zod it validates with) is loaded when the first session opens: it is a third of the engine's
 * start-up memory, and most labs start many times for each time an agent connects.
 */
let sdk: Promise<typeof import('./server.js')> | undefined;
const loadSdk = () => (sdk ??= import('./server.js'));

/** Who opened a session: a session id alone must not let another caller (or another key of the same user) in. */
const ownerOf = (caller: Caller) => `${caller.kind}:${caller.user.id}:${caller.key?.id ?? ''}`;

interface McpSession {
  owner: string;
  transport: WebStandardStreamableHTTPServerTransport;
  server: Server;
  lastUsed: number;
  /** Lets go of its hold in the organization it was opened in. */
  release: () => void;
}

/** An MCP-level refusal before the SDK sees the request, in the API's error body. */
function refuse(reply: FastifyReply, status: number, code: string, message: string) {
  return reply.code(status).send({ error: { code, message } });
}

/**
 * /mcp: the Model Context Protocol over Streamable HTTP (the SDK's transport), on the same origin and with the same
 * authentication and organization selection as /api/v1. The auth hook has run before any handler here: without a
 * bearer the request is a 401 in the API's error body. Each MCP session belongs to the caller who opened it.
 * Register it in a plugin of its own (its content-type parsers are not the API's).
 */
export function mcpRoutes(app: App, lab: McpLab, version: string, membership: Pick<Membership, 'hold'>): void {
  const sessions = new Map<string, McpSession>();
  const log = (error: unknown) => app.log.error({ err: error }, 'MCP tool failed');

  const sweep = setInterval(() => {
    const cutoff = Date.now() - IDLE_MS;
    for (const [id, session] of sessions) if (session.lastUsed < cutoff) void close(id);
  }, SWEEP_MS);
  sweep.unref();

  async function close(id: string) {
    const session = sessions.get(id);
    if (!session) return;
    sessions.delete(id);
    session.release();
    await session.transport.close().catch(() => undefined);
    await session.server.close().catch(() => undefined);
  }

  // Open SSE streams would hold the server's close: every session ends first. (preClose: Fastify closes the server
  // before the onClose hooks run, and that close waits for every open response.)
  app.addHook('preClose', async () => {
    clearInterval(sweep);
    await Promise.all([...sessions.keys()].map(close));
  });

  /**
   * Hands the request to the SDK's web-standard transport and sends its answer through Fastify, as a REST reply is
   * sent. (The SDK's Node transport converts each request and response through @hono/node-server on the way: a
   * third of what a tool call cost over the same REST call.) A JSON answer goes as one body; an SSE stream is piped.
   */
  async function handOver(req: FastifyRequest, reply: FastifyReply, transport: WebStandardStreamableHTTPServerTransport, body: unknown) {
    const authInfo: ScopeAuth = { token: '', clientId: ownerOf(callerOf(req)), scopes: [], extra: { scope: scopeOf(req) } };
    // Only the headers the transport reads (the body is parsed already, and who is calling is in authInfo): a web
    // Headers object is costly to fill, and a tool call's request carried a dozen for it to copy.
    const headers = new Headers();
    for (const name of TRANSPORT_HEADERS) {
      const value = req.headers[name];
      if (typeof value === 'string') headers.set(name, value);
    }
    const request = new Request(`http://${req.host}${req.url}`, { method: req.method, headers });
    const response = await transport.handleRequest(request, { parsedBody: body, authInfo });
    const answerHeaders = Object.fromEntries(response.headers);
    if (response.body && response.headers.get('content-type')?.startsWith('text/event-stream')) {
      // A stream's headers go at once (the client waits for them before any event), and its events as they come.
      reply.hijack();
      reply.raw.writeHead(response.status, answerHeaders);
      reply.raw.flushHeaders();
      const events = Readable.fromWeb(response.body as WebReadableStream<Uint8Array>);
      events.on('error', () => reply.raw.destroy());
      reply.raw.on('close', () => events.destroy());
      events.pipe(reply.raw);
      return;
    }
    // The answer's bytes as they are: as text they would be decoded from UTF-8 and encoded again (a screenshot's
    // base64 is most of them).
    return reply.code(response.status).headers(answerHeaders).send(response.body ? Buffer.from(await response.arrayBuffer()) : undefined);
  }

  /** The caller's session named by the header, or why not. */
  function sessionOf(req: FastifyRequest, reply: FastifyReply): McpSession | undefined {
    const id = req.headers[SESSION_HEADER];
    if (typeof id !== 'string' || id === '') {
      void refuse(reply, 400, 'mcp_session_required', `Send the ${SESSION_HEADER} header that initialize answered with, or POST an initialize request to start a session.`);
      return undefined;
    }
    const session = sessions.get(id);
    // Another caller's session is as unknown as a closed one: its existence does not leak.
    if (!session || session.owner !== ownerOf(callerOf(req))) {
      void refuse(reply, 404, 'mcp_session_not_found', 'No MCP session with that id: it was closed, expired, or opened by another caller. Initialize a new one.');
      return undefined;
    }
    session.lastUsed = Date.now();
    return session;
  }

  /**
   * Browsers send Origin; an MCP client does not. A page of another origin must not reach the lab through a
   * browser that has a token (DNS rebinding), as the MCP specification requires servers to check.
   */
  function foreignOrigin(req: FastifyRequest): boolean {
    const origin = req.headers.origin;
    if (!origin) return false;
    try {
      return new URL(origin).host !== req.headers.host;
    } catch {
      return true;
    }
  }

  // The body is read by Fastify (its body limit applies) and handed to the transport already parsed. `app` is this
  // module's own plugin context, so these parsers and hooks apply to /mcp only.
  {
    const mcp = app;
    mcp.removeAllContentTypeParsers();
    mcp.addContentTypeParser('application/json', { parseAs: 'string' }, (_req, body, done) => {
      try {
        done(null, JSON.parse(body as string));
      } catch {
        done(null, PARSE_ERROR);
      }
    });
    // Other media types reach the transport unread, which answers 415 as the protocol says.
    mcp.addContentTypeParser('*', (_req, _payload, done) => done(null, undefined));

    mcp.addHook('preHandler', async (req, reply) => {
      if (foreignOrigin(req)) return refuse(reply, 403, 'forbidden_origin', 'Requests from a web page of another origin are refused.');
      // The organization is resolved (and refused, for a key of another one) before the transport takes over.
      scopeOf(req);
    });

    mcp.post(MCP_PATH, HIDDEN, async (req, reply) => {
      const body = req.body;
      if (body === PARSE_ERROR) {
        return reply.code(400).send({ jsonrpc: '2.0', error: { code: PARSE_ERROR_CODE, message: 'Parse error: the body is not JSON.' }, id: null });
      }
      if (req.headers[SESSION_HEADER] === undefined) {
        const mcpSdk = await loadSdk();
        if (mcpSdk.isInitializeRequest(body)) {
          const owner = ownerOf(callerOf(req));
          const { organization, caller } = scopeOf(req);
          const { server, transport } = mcpSdk.openSession(lab, version, log, {
            // A member removed from the organization the session was opened in loses the session with it.
            opened: (id, opened) => sessions.set(id, { owner, ...opened, lastUsed: Date.now(), release: membership.hold(organization.id, caller.user.id, () => void close(id)) }),
            closed: (id) => {
              sessions.get(id)?.release();
              sessions.delete(id);
            },
          });
          await server.connect(transport);
          return handOver(req, reply, transport, body);
        }
      }
      const session = sessionOf(req, reply);
      if (session) return handOver(req, reply, session.transport, body);
    });

    // The standalone SSE stream, for messages the server sends outside a request.
    mcp.get(MCP_PATH, HIDDEN, async (req, reply) => {
      const session = sessionOf(req, reply);
      if (session) return handOver(req, reply, session.transport, undefined);
    });

    // The client ends its session: the transport answers and calls onsessionclosed.
    mcp.delete(MCP_PATH, HIDDEN, async (req, reply) => {
      const session = sessionOf(req, reply);
      if (!session) return;
      await handOver(req, reply, session.transport, undefined);
      await close(req.headers[SESSION_HEADER] as string);
    });
  }
}

