import type { FastifyError, FastifyReply, FastifyRequest, RouteOptions } from 'fastify';
import { STATUS_CODES } from 'node:http';
import type { Socket } from 'node:net';
import { nearestDeclared } from './errors.js';
import type { App } from './http.js';

/**
 * Longer than anything Node lets through (its request line and headers are capped at 16 KiB): every path parameter
 * reaches its route, whose schema and service judge it, so that a too-long serial is simply not found, in the
 * operation's own terms, instead of the router's 414 or a route_not_found.
 */
export const MAX_PARAM_LENGTH = 16 * 1024;

interface DeclaredRoute {
  method: string;
  pattern: RegExp;
  params: number;
  statuses: number[];
}

interface ErrorAnswer {
  status: number;
  body: { error: { code: string; message: string } };
}

/**
 * The errors Fastify's router and Node's HTTP parser answer before any route runs: an undecodable path, a request
 * line or headers over Node's limit, a request line that is not HTTP. Each gets the error body, and the status the
 * operation its request line names declares, found from the request line in a table of every route's statuses.
 */
export class RouterErrors {
  private readonly routes: DeclaredRoute[] = [];

  /** Records every route's declared statuses as it is added; call before any route is registered. */
  attach(app: App): void {
    app.addHook('onRoute', (route: RouteOptions) => {
      const response = route.schema?.response as Record<string, unknown> | undefined;
      if (!response) return;
      const statuses = Object.keys(response).map(Number);
      const pattern = new RegExp(`^${route.url.split('/').map(segment).join('/')}$`);
      const params = (route.url.match(/[:*]/g) ?? []).length;
      for (const method of [route.method].flat()) this.routes.push({ method, pattern, params, statuses });
      // Static routes before parametric ones, as the router itself prefers them.
      this.routes.sort((a, b) => a.params - b.params);
    });
  }

  /** The statuses the operation at this method and raw (undecoded) path declares, if one is there. */
  declared(method: string, url: string): number[] | undefined {
    const path = url.split('?')[0]!;
    return this.routes.find((r) => r.method === method && r.pattern.test(path))?.statuses;
  }

  /** Fastify's frameworkErrors: an undecodable path (%ff) names nothing there is. */
  readonly frameworkError = (error: FastifyError, request: FastifyRequest, reply: FastifyReply): void => {
    const answer = this.answer(request.raw.method ?? 'GET', request.raw.url ?? '/', error.code === 'FST_ERR_ASYNC_CONSTRAINT' ? 500 : 404);
    reply.code(answer.status).type('application/json').send(answer.body);
  };

  /** Node's clientError: the request could not be parsed at all, or its head is over the limit. */
  readonly clientError = (error: Error & { code?: string; rawPacket?: unknown }, socket: Socket): void => {
    if (error.code === 'ECONNRESET' || socket.destroyed) return;
    // Whatever the packet holds of a request line, if it starts with one.
    const packet = Buffer.isBuffer(error.rawPacket) ? error.rawPacket.subarray(0, 64 * 1024).toString('latin1') : '';
    const line = /^([A-Z]{3,10}) (\/[^ \r\n]*)/.exec(packet);
    const answer = this.answer(line?.[1] ?? '', line?.[2] ?? '', 400, error.code);
    const text = JSON.stringify(answer.body);
    if (socket.writable) {
      socket.end(`HTTP/1.1 ${answer.status} ${STATUS_CODES[answer.status]}\r\nContent-Type: application/json\r\n` +
        `Content-Length: ${Buffer.byteLength(text)}\r\nConnection: close\r\n\r\n${text}`);
    }
    // A client still sending is not waited for.
    setTimeout(() => socket.destroy(), 1000).unref();
  };

  private answer(method: string, url: string, natural: number, parserCode?: string): ErrorAnswer {
    const declared = method ? this.declared(method, url) : undefined;
    const status = nearestDeclared(declared, natural);
    if (natural >= 500) return { status, body: { error: { code: 'internal_error', message: 'Something went wrong inside Benchtop.' } } };
    if (natural === 404) {
      return declared
        ? { status, body: { error: { code: 'not_found', message: 'No resource at that path: it is not a valid URL.' } } }
        : { status, body: { error: { code: 'route_not_found', message: 'No route at that path: it is not a valid URL.' } } };
    }
    if (parserCode === 'HPE_HEADER_OVERFLOW') {
      return { status, body: { error: { code: 'request_too_large', message: 'The request line and headers are larger than 16 KiB.' } } };
    }
    if (parserCode === 'ERR_HTTP_REQUEST_TIMEOUT') {
      return { status, body: { error: { code: 'request_timeout', message: 'The request did not arrive in time.' } } };
    }
    return { status, body: { error: { code: 'bad_request', message: 'The request is not well-formed HTTP/1.1.' } } };
  }
}

/** A route path segment as a pattern over raw paths: a parameter is any run of characters but a slash. */
function segment(part: string): string {
  if (part === '*') return '.*';
  if (part.startsWith(':')) return '[^/]+';
  return part.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}
