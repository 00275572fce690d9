import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify';
import { ServiceError, type ErrorKind } from '../domain/errors.js';
import { redactUrl } from './redact.js';

const STATUS_OF: Record<ErrorKind, number> = {
  invalid: 400,
  unauthorized: 401,
  forbidden: 403,
  not_found: 404,
  conflict: 409,
  too_many: 429,
};

/**
 * When an operation does not declare the natural status for an error, the nearest status it does declare.
 * The spec fixes each operation's statuses (PATCH /organizations/{id} has no 404, POST /sessions no 400), and
 * clients rely on never seeing another; the error code still says exactly what happened.
 */
const FALLBACKS: Record<number, number[]> = {
  400: [400, 404, 403, 409, 401],
  403: [403, 404, 401],
  404: [404, 403, 400, 401],
  409: [409, 400, 403],
  // Rate limits are 'not shown' by the spec; an operation without 429 (accepting an invitation) refuses with 403,
  // and one that declares neither 403 nor 400 (uploading an asset) with the 404 it answers any refused form with.
  429: [429, 403, 400, 404],
};

interface Mapped {
  status: number;
  code: string;
  message: string;
}

function classify(error: FastifyError | ServiceError | Error): Mapped {
  if (error instanceof ServiceError) return { status: STATUS_OF[error.kind], code: error.code, message: error.message };
  const e = error as FastifyError;
  if (e.validation) {
    // A malformed id in the path names nothing that exists.
    if (e.validationContext === 'params') return { status: 404, code: 'not_found', message: 'No resource with that id.' };
    return { status: 400, code: 'invalid_request', message: `Invalid request: ${e.message}.` };
  }
  switch (e.code) {
    case 'FST_ERR_CTP_INVALID_JSON_BODY':
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
      return { status: 400, code: 'invalid_json', message: 'The request body is not valid JSON.' };
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return { status: 400, code: 'body_too_large', message: 'The request body is larger than 1 MiB.' };
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
      return { status: 400, code: 'unsupported_media_type', message: 'Send the body as application/json.' };
  }
  if (e.statusCode && e.statusCode >= 400 && e.statusCode < 500) {
    if (e instanceof SyntaxError) return { status: 400, code: 'invalid_json', message: 'The request body is not valid JSON.' };
    return { status: 400, code: 'invalid_request', message: e.message };
  }
  return { status: 500, code: 'internal_error', message: 'Something went wrong inside Benchtop. The error was logged.' };
}

function declaredStatuses(request: FastifyRequest): number[] | undefined {
  const response = request.routeOptions?.schema?.response as Record<string, unknown> | undefined;
  return response ? Object.keys(response).map(Number) : undefined;
}

export function errorStatus(request: FastifyRequest, natural: number): number {
  return nearestDeclared(declaredStatuses(request), natural);
}

/** The natural status if the operation declares it (or declares nothing), else the nearest one it does declare. */
export function nearestDeclared(declared: number[] | undefined, natural: number): number {
  if (!declared || natural >= 500 || declared.includes(natural)) return natural;
  return (FALLBACKS[natural] ?? [natural]).find((s) => declared.includes(s)) ?? natural;
}

export function sendError(request: FastifyRequest, reply: FastifyReply, error: Error): FastifyReply {
  const mapped = classify(error);
  if (mapped.status >= 500) request.log.error({ err: error, reqId: request.id, url: redactUrl(request.url) }, 'unhandled error');
  const status = errorStatus(request, mapped.status);
  return reply.code(status).type('application/json').send({ error: { code: mapped.code, message: mapped.message } });
}
