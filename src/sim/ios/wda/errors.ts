/** A W3C error as WDA's FBCommandStatus answers it: the HTTP status, the error code and the message. */
export class WdaError extends Error {
  constructor(
    readonly status: number,
    readonly error: string,
    message: string,
  ) {
    super(message);
  }
}

export const invalidArgument = (message: string) => new WdaError(400, 'invalid argument', message);
export const invalidSelector = (message: string) => new WdaError(400, 'invalid selector', message);
export const invalidElementState = (message: string) => new WdaError(400, 'invalid element state', message);
export const unknownError = (message: string) => new WdaError(500, 'unknown error', message);
