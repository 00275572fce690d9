import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Readable } from 'node:stream';
import { ServiceError } from '../../domain/errors.js';
import { jsonTooDeep, MAX_JSON_DEPTH } from '../../domain/json-depth.js';
import type { Auth } from '../../services/auth.js';
import type { Scope } from '../../services/scope.js';
import { CommandError, parseCommand, type Command } from '../../domain/webdriver-commands.js';
import { WebDriverError, type CommandBody, type WebDriverRuns } from '../../services/webdriver.js';
import type { App } from '../http.js';

export const WEBDRIVER_PATH = '/wd/hub';

/** W3C WebDriver's HTTP status for each error name (https://www.w3.org/TR/webdriver2/#errors), and ours for credentials. */
const STATUS: Record<string, number> = {
  'invalid argument': 400,
  'invalid session id': 404,
  'session not created': 500,
  'unknown command': 404,
  'unknown method': 405,
  'unknown error': 500,
  unauthorized: 401,
};
/** A new-session request comes from someone not yet known: its body is bounded as any unauthenticated one. */
const NEW_SESSION_BODY_LIMIT = 1024 * 1024;
/** A body the lab reads itself (a script, settings): a file goes to the push_file route, whose body is streamed. */
const INSPECTED_BODY_LIMIT = 1024 * 1024;
/** The WebDriver endpoint is not an operation of the API: the OpenAPI document leaves it out (docs/webdriver.md has it). */
const HIDDEN = { hide: true };

function w3c(reply: FastifyReply, error: string, message: string) {
  // A body that has not all arrived is not read further: the connection ends with the answer.
  if (!reply.request.raw.complete) reply.header('connection', 'close');
  return reply
    .code(STATUS[error] ?? 500)
    .header('content-type', 'application/json; charset=utf-8')
    .send({ value: { error, message, stacktrace: '' } });
}

/** A body read whole as text, or undefined once it is longer than `limit` (its Content-Length says so before a byte). */
async function bodyText(request: FastifyRequest, limit: number): Promise<string | undefined> {
  const payload = request.body as Readable | undefined;
  if (!payload) return '';
  if (Number(request.headers['content-length'] ?? 0) > limit) return undefined;
  const chunks: Buffer[] = [];
  let size = 0;
  // Not a for-await: leaving one early would destroy the socket the answer must still go out on.
  return new Promise((resolve, reject) => {
    const data = (chunk: Buffer) => {
      size += chunk.length;
      if (size <= limit) return void chunks.push(chunk);
      payload.off('data', data).off('end', end).off('error', reject).pause();
      resolve(undefined);
    };
    const end = () => resolve(Buffer.concat(chunks).toString('utf8'));
    payload.on('data', data).once('end', end).once('error', reject);
  });
}

/**
 * The credentials of a request, as clouds take them: HTTP Basic with an API key as the password
 * (`https://any:mob_...@lab/wd/hub`, what WebdriverIO and Selenium clients send from a URL), or a Bearer header.
 */
function authorizationOf(request: FastifyRequest): string | undefined {
  const header = request.headers.authorization;
  const basic = /^Basic\s+([A-Za-z0-9+/=]+)$/i.exec(header ?? '');
  if (!basic) return header;
  const decoded = Buffer.from(basic[1]!, 'base64').toString('utf8');
  const colon = decoded.indexOf(':');
  return `Bearer ${colon >= 0 ? decoded.slice(colon + 1) : decoded}`;
}

/**
 * W3C WebDriver for the whole lab at /wd/hub, served by real Appium behind the lab. The new-session request carries an
 * API key (or token); every later command is authorized by its session id, a secret. A command that also carries
 * credentials must carry its own organization's, or the session is not found. Register it in a plugin of its own
 * (its body parser is not the API's: a body stays a stream until a route reads it or passes it on to Appium).
 */
export function webDriverRoutes(app: App, runs: WebDriverRuns, auth: Auth): void {
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('*', (_request, payload, done) => done(null, payload));
  // What Fastify refuses before a handler (a malformed request) is the caller's; anything else, the lab's.
  app.setErrorHandler((error: Error & { statusCode?: number }, request, reply) => {
    if (error.statusCode !== undefined && error.statusCode < 500) return w3c(reply, 'invalid argument', error.message);
    request.log.error(error);
    return w3c(reply, 'unknown error', 'The lab failed to handle the command.');
  });

  /** The caller's scope, or undefined without credentials; a reply is sent (and undefined answered) for bad ones. */
  async function scopeOf(request: FastifyRequest, reply: FastifyReply, required: boolean): Promise<Scope | undefined | null> {
    const authorization = authorizationOf(request);
    if (!authorization) {
      if (!required) return undefined;
      reply.header('www-authenticate', 'Basic realm="Benchtop"');
      w3c(reply, 'unauthorized', 'Send an API key: https://any:<mob_ key>@<lab>/wd/hub, or Authorization: Bearer <key>.');
      return null;
    }
    try {
      const caller = await auth.authenticate(authorization);
      const header = request.headers['x-organization-id'];
      return auth.resolveScope(caller, Array.isArray(header) ? header[0] : header);
    } catch (error) {
      if (!(error instanceof ServiceError)) throw error;
      reply.header('www-authenticate', 'Basic realm="Benchtop"');
      w3c(reply, 'unauthorized', error.message);
      return null;
    }
  }

  const failed = (reply: FastifyReply, error: unknown) => {
    if (error instanceof WebDriverError) return w3c(reply, error.w3c, error.message);
    throw error;
  };

  const route = { config: { public: true }, schema: HIDDEN };

  // Ready only while a session of the caller's could start now, as a grid's status says of its slots.
  app.get(`${WEBDRIVER_PATH}/status`, route, async (request, reply) => {
    const scope = await scopeOf(request, reply, false);
    if (scope === null) return reply;
    const { ready, freePhones, message } = runs.readiness(scope);
    return reply.send({ value: { ready, message, freePhones, build: { version: 'benchtop' } } });
  });

  app.post(`${WEBDRIVER_PATH}/session`, route, async (request, reply) => {
    const scope = await scopeOf(request, reply, true);
    if (!scope) return reply;
    const text = await bodyText(request, NEW_SESSION_BODY_LIMIT);
    if (text === undefined) return w3c(reply, 'invalid argument', `A new-session body is at most ${NEW_SESSION_BODY_LIMIT / 1024} KiB.`);
    if (jsonTooDeep(text)) return w3c(reply, 'invalid argument', `The body nests deeper than ${MAX_JSON_DEPTH} levels.`);
    let body: unknown;
    try {
      body = JSON.parse(text);
    } catch {
      return w3c(reply, 'invalid argument', 'The body must be JSON: {"capabilities": {"alwaysMatch": {...}}}.');
    }
    // A client that gives up (closes its connection) while it waits in the queue leaves the queue.
    const gone = new AbortController();
    reply.raw.once('close', () => {
      if (!reply.raw.writableFinished) gone.abort();
    });
    try {
      // The address the client used (its Host header is one of the lab's own names, checked before any route): a CI log
      // that prints the run's page gives a link that opens where the suite ran from.
      const value = await runs.start(scope, body, gone.signal, request.headers.host ? `${request.protocol}://${request.headers.host}` : undefined);
      return reply.header('content-type', 'application/json; charset=utf-8').send({ value });
    } catch (error) {
      return failed(reply, error);
    }
  });

  // Appium 3's session discovery, as Appium Inspector's "Attach to Session" reads it: the caller's organization's only.
  app.get(`${WEBDRIVER_PATH}/appium/sessions`, route, async (request, reply) => {
    const scope = await scopeOf(request, reply, true);
    if (!scope) return reply;
    try {
      return reply.send({ value: runs.list(scope) });
    } catch (error) {
      if (error instanceof ServiceError) return w3c(reply, 'unauthorized', error.message);
      throw error;
    }
  });

  /** Before a command's body is read: an unknown session, or another organization's credentials, end it here. */
  const known = {
    ...route,
    onRequest: async (request: FastifyRequest, reply: FastifyReply) => {
      const { sessionId } = request.params as { sessionId: string };
      if (!runs.exists(sessionId)) return w3c(reply, 'invalid session id', 'No running session of this lab has that id (it ended, or it never existed).');
      const scope = await scopeOf(request, reply, false);
      if (scope === null) return reply;
      (request as { webDriverScope?: Scope }).webDriverScope = scope;
    },
  };
  const scopeOfCommand = (request: FastifyRequest) => (request as { webDriverScope?: Scope }).webDriverScope;

  // The session's capabilities, as Appium 2 answered GET /session/{id} (Appium Inspector attaches by it).
  app.get(`${WEBDRIVER_PATH}/session/:sessionId`, known, async (request, reply) => {
    const { sessionId } = request.params as { sessionId: string };
    try {
      return reply.header('content-type', 'application/json; charset=utf-8').send({ value: runs.capabilitiesOf(sessionId, scopeOfCommand(request)) });
    } catch (error) {
      return failed(reply, error);
    }
  });

  // Exactly this: the session's own DELETE ends it (and frees its phone); a DELETE of anything under it is a command.
  app.delete(`${WEBDRIVER_PATH}/session/:sessionId`, known, async (request, reply) => {
    const { sessionId } = request.params as { sessionId: string };
    try {
      await runs.delete(sessionId, scopeOfCommand(request));
      return reply.header('content-type', 'application/json; charset=utf-8').send({ value: null });
    } catch (error) {
      return failed(reply, error);
    }
  });

  app.route({
    method: ['GET', 'POST', 'DELETE'],
    url: `${WEBDRIVER_PATH}/session/:sessionId/*`,
    ...known,
    handler: async (request, reply) => {
      const { sessionId } = request.params as { sessionId: string; '*': string };
      // The path as it came on the socket: what the router decoded or normalised is not what is parsed.
      const url = request.raw.url ?? '';
      const prefix = `${WEBDRIVER_PATH}/session/${sessionId}`;
      let command: Command;
      try {
        if (!url.startsWith(`${prefix}/`)) throw new CommandError('unknown command', `${request.method} ${url.split('?')[0]!.slice(0, 200)} is no WebDriver command this lab knows.`);
        command = parseCommand(request.method, url.slice(prefix.length));
      } catch (error) {
        if (error instanceof CommandError) return w3c(reply, error.w3c, error.message);
        throw error;
      }
      let body: CommandBody;
      // Only a POST carries a body to Appium (W3C's GET and DELETE commands take none).
      const payload = request.method === 'POST' ? (request.body as Readable | undefined) : undefined;
      // A body the lab must read is read even when empty: nothing reaches Appium on those routes unchecked.
      if (command.body === 'inspect') {
        const text = await bodyText(request, INSPECTED_BODY_LIMIT);
        if (text === undefined) return w3c(reply, 'invalid argument', `The lab reads this command's body itself: at most ${INSPECTED_BODY_LIMIT / 1024} KiB (a file goes to POST /session/{id}/appium/device/push_file).`);
        if (jsonTooDeep(text)) return w3c(reply, 'invalid argument', `The body nests deeper than ${MAX_JSON_DEPTH} levels.`);
        body = { text };
      } else if (payload) {
        const length = request.headers['content-length'];
        body = { stream: payload, length: length === undefined ? undefined : Number(length) };
      }
      try {
        const answer = await runs.command(sessionId, scopeOfCommand(request), command, body);
        return reply.code(answer.status).header('content-type', answer.contentType).send(answer.body);
      } catch (error) {
        return failed(reply, error);
      }
    },
  });

  app.route({
    method: ['GET', 'POST', 'DELETE', 'PUT', 'PATCH'],
    url: `${WEBDRIVER_PATH}/*`,
    ...route,
    handler: async (request, reply) => w3c(reply, 'unknown command', `${request.method} ${request.url.split('?')[0]} is no WebDriver command this lab knows.`),
  });
}
