/**
 * What went wrong, in the service's own terms. The API layer maps each kind to an HTTP status; nothing below
 * the API knows about HTTP.
 */
export type ErrorKind = 'invalid' | 'unauthorized' | 'forbidden' | 'not_found' | 'conflict' | 'too_many';

export class ServiceError extends Error {
  constructor(
    readonly kind: ErrorKind,
    readonly code: string,
    message: string,
  ) {
    super(message);
    this.name = 'ServiceError';
  }
}

export const invalid = (code: string, message: string) => new ServiceError('invalid', code, message);
export const unauthorized = (message = 'Missing or invalid credentials.') =>
  new ServiceError('unauthorized', 'unauthorized', message);
export const forbidden = (code: string, message: string) => new ServiceError('forbidden', code, message);
export const notFound = (what: string) =>
  new ServiceError('not_found', `${what.toLowerCase().replace(/ /g, '_')}_not_found`, `No ${what} with that id.`);
export const conflict = (code: string, message: string) => new ServiceError('conflict', code, message);
