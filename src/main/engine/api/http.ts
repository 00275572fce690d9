import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { FastifyBaseLogger, FastifyInstance, FastifyRequest, RawReplyDefaultExpression, RawRequestDefaultExpression, RawServerDefault } from 'fastify';
import { Type, type TSchema } from 'typebox';
import { ErrorBody } from '../../../shared/api/common.js';
import type { Caller, Scope } from '../services/scope.js';

/** Turns a caller and the organization they asked for (if any) into the scope a request acts on. */
export type ScopeResolver = (caller: Caller, organization: string | undefined) => Scope;

/** The Fastify instance every routes module registers on. */
export type App = FastifyInstance<
  RawServerDefault,
  RawRequestDefaultExpression,
  RawReplyDefaultExpression,
  FastifyBaseLogger,
  TypeBoxTypeProvider
>;

declare module 'fastify' {
  interface FastifyContextConfig {
    /** No credentials needed (health, login, sign-up, the OpenAPI document). */
    public?: boolean;
  }
  interface FastifyRequest {
    caller?: Caller;
    /** Set with the caller by the auth hook: how this request's organization is chosen (auth's resolveScope). */
    resolveScope?: ScopeResolver;
  }
}

export const BEARER = [{ bearer: [] }];

/** A route's response schemas: its success bodies plus the error body for each declared error status. */
export function responses(success: Record<number, TSchema>, errors: readonly number[]): Record<number, TSchema> {
  const out: Record<number, TSchema> = { ...success };
  for (const status of errors) out[status] = ErrorBody;
  return out;
}

export function callerOf(request: FastifyRequest): Caller {
  // The onRequest hook authenticated every non-public route before it got here.
  return request.caller!;
}

/** The organization the request acts on, chosen by X-Organization-Id, the key, or Personal. */
export function scopeOf(request: FastifyRequest, orgInQuery?: string): Scope {
  const header = request.headers['x-organization-id'];
  return request.resolveScope!(callerOf(request), (Array.isArray(header) ? header[0] : header) || orgInQuery);
}

/** The query of a WebSocket route: what a browser cannot send as headers. The route also sets tokenInQuery. */
export const SOCKET_QUERY = {
  token: Type.Optional(Type.String({ description: 'The bearer (API key or token), for browsers, which cannot set headers on a WebSocket. A subprotocol bearer.<token> works too.' })),
  org: Type.Optional(Type.String({ description: 'The organization to act on, when X-Organization-Id cannot be sent.' })),
};

export const OrganizationHeader = {
  type: 'object',
  properties: {
    'x-organization-id': { type: 'string', description: 'The organization to act on; defaults to the key\'s, else Personal.' },
  },
} as const;
