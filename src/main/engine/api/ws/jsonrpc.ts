import AjvModule from 'ajv';
import type { ValidateFunction } from 'ajv';
import type { TSchema } from 'typebox';
import { ServiceError } from '../../domain/errors.js';

// ajv is CommonJS; its default export arrives wrapped under ESM.
const Ajv = (AjvModule as unknown as { default: typeof AjvModule }).default ?? AjvModule;
const ajv = new Ajv({ strict: false, allErrors: false });

/**
 * JSON-RPC 2.0 over a WebSocket, as the Mobile Next fleet speaks it: one request or a batch per text message, any
 * number of ids in flight, replies in the order they finish. Every failure is a JSON-RPC error on the same socket,
 * never a dropped connection.
 */

/** The error codes: JSON-RPC's own, and the fleet's (-32020, -32022), which mobilecli and mobilewright show as is. */
export const RPC_ERRORS = {
  parseError: -32700,
  invalidRequest: -32600,
  methodNotFound: -32601,
  invalidParams: -32602,
  internalError: -32603,
  /** The operation failed: the phone refused, a quota, a role, or something Benchtop cannot do. */
  serverError: -32000,
  /** The device is not allocated to the caller (unknown, another organization's, or not in_use). */
  deviceNotAllocated: -32020,
  /** No device of the lab matches the allocation's filters. */
  noMatchingDevice: -32022,
} as const;

/**
 * What a client sees of a failure: a code and a clear message. No `data`: mobilecli decodes `data` as a string and
 * prefers it over the message, so the message says it all.
 */
export class RpcError extends Error {
  constructor(
    readonly code: number,
    message: string,
  ) {
    super(message);
    this.name = 'RpcError';
  }
}

export const invalidParams = (message: string) => new RpcError(RPC_ERRORS.invalidParams, message);
export const unsupported = (message: string) => new RpcError(RPC_ERRORS.serverError, message);

/** A method: its params' schema, and a handler that gets params that passed it. */
export interface RpcMethod<Call> {
  params: TSchema;
  handle(params: unknown, call: Call): unknown;
}

interface Request {
  jsonrpc: '2.0';
  method: string;
  params?: unknown;
  id?: string | number | null;
}

type Reply = { jsonrpc: '2.0'; id: string | number | null } & ({ result: unknown } | { error: { code: number; message: string } });

function errorReply(id: Request['id'], error: RpcError): Reply {
  return { jsonrpc: '2.0', id: id ?? null, error: { code: error.code, message: error.message } };
}

/** A service's refusal in the fleet's codes; anything else is an internal error whose details stay in the log. */
export function rpcErrorOf(error: unknown, log: (error: unknown) => void): RpcError {
  if (error instanceof RpcError) return error;
  if (error instanceof ServiceError) {
    if (error.code === 'device_not_found' || error.code === 'device_not_in_use') {
      return new RpcError(RPC_ERRORS.deviceNotAllocated, `Device not allocated: ${error.message}`);
    }
    if (error.code === 'no_matching_device') return new RpcError(RPC_ERRORS.noMatchingDevice, error.message);
    if (error.kind === 'invalid') return new RpcError(RPC_ERRORS.invalidParams, error.message);
    return new RpcError(RPC_ERRORS.serverError, error.message);
  }
  log(error);
  return new RpcError(RPC_ERRORS.internalError, 'Internal error: the request failed unexpectedly.');
}

function isRequest(value: unknown): value is Request {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return false;
  const r = value as Record<string, unknown>;
  const idOk = !('id' in r) || r.id === null || typeof r.id === 'string' || (typeof r.id === 'number' && Number.isFinite(r.id));
  return r.jsonrpc === '2.0' && typeof r.method === 'string' && idOk && (r.params === undefined || (typeof r.params === 'object' && r.params !== null));
}

/** Dispatches the messages of one socket to a method table. */
export class RpcDispatcher<Call> {
  private readonly validators = new Map<string, ValidateFunction>();

  constructor(
    private readonly methods: Readonly<Record<string, RpcMethod<Call>>>,
    private readonly log: (error: unknown) => void,
  ) {}

  /** The reply to one message (a request, a notification, or a batch), or undefined when none is due. */
  async message(text: string, call: Call): Promise<string | undefined> {
    let parsed: unknown;
    try {
      parsed = JSON.parse(text);
    } catch {
      return JSON.stringify(errorReply(null, new RpcError(RPC_ERRORS.parseError, 'Parse error: the message is not JSON.')));
    }
    if (Array.isArray(parsed)) {
      if (parsed.length === 0) return JSON.stringify(errorReply(null, new RpcError(RPC_ERRORS.invalidRequest, 'Invalid request: an empty batch.')));
      const replies = (await Promise.all(parsed.map((r) => this.request(r, call)))).filter((r) => r !== undefined);
      return replies.length > 0 ? JSON.stringify(replies) : undefined;
    }
    const reply = await this.request(parsed, call);
    return reply && JSON.stringify(reply);
  }

  private async request(value: unknown, call: Call): Promise<Reply | undefined> {
    if (!isRequest(value)) {
      const id = (value as { id?: unknown } | null)?.id;
      const echo = typeof id === 'string' || typeof id === 'number' ? id : null;
      return errorReply(echo, new RpcError(RPC_ERRORS.invalidRequest, 'Invalid request: expected {"jsonrpc":"2.0","method":"...","params":{...},"id":...}.'));
    }
    // A request without an id is a notification: it runs, and nothing is answered (JSON-RPC 2.0).
    const notification = !('id' in value);
    const id = value.id ?? null;
    try {
      const result = await this.run(value, call);
      return notification ? undefined : { jsonrpc: '2.0', id, result: result ?? null };
    } catch (error) {
      return notification ? undefined : errorReply(id, rpcErrorOf(error, this.log));
    }
  }

  private run(request: Request, call: Call): unknown {
    const method = Object.hasOwn(this.methods, request.method) ? this.methods[request.method] : undefined;
    if (!method) throw new RpcError(RPC_ERRORS.methodNotFound, `Method not found: ${request.method}`);
    const params = request.params ?? {};
    let validate = this.validators.get(request.method);
    if (!validate) {
      validate = ajv.compile(method.params);
      this.validators.set(request.method, validate);
    }
    if (!validate(params)) {
      const e = validate.errors?.[0];
      throw invalidParams(`Invalid params for ${request.method}: ${e ? `params${e.instancePath} ${e.message}` : 'they do not match'}.`);
    }
    return method.handle(params, call);
  }
}
