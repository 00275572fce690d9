import type { FastifyReply, FastifyRequest, RouteOptions } from 'fastify';
import { ServiceError } from '../domain/errors.js';
import { LoginThrottle, type Taken } from '../domain/login-throttle.js';
import type { App } from './http.js';

/** The attempts that are throttled when they fail: each names the statuses that count as a failure. */
const ATTEMPTS = {
  /** A wrong password (or an unknown email: the same 401), held per email and per client address. */
  login: { failures: [401], account: (req: FastifyRequest) => emailOf(req) },
  /** An email already taken: what probing for accounts looks like. Held per client address. */
  signup: { failures: [409], account: () => undefined },
  /** An invitation that is not there or not the caller's, held per caller and per client address. */
  invitation: { failures: [403, 404], account: (req: FastifyRequest) => (req.caller ? `user:${req.caller.user.id}` : undefined) },
} as const;

export type ThrottledAttempt = keyof typeof ATTEMPTS;

declare module 'fastify' {
  interface FastifyContextConfig {
    /** Failures of this route are throttled per account and client address (429 with Retry-After). */
    throttle?: ThrottledAttempt;
  }
  interface FastifyRequest {
    /** The tokens this request took when the throttle let it through, given back unless it fails. */
    throttleTaken?: Taken;
  }
}

function emailOf(req: FastifyRequest): string | undefined {
  const email = (req.body as { email?: unknown } | undefined)?.email;
  return typeof email === 'string' ? `email:${email.trim().toLowerCase()}` : undefined;
}

/**
 * The counts of failed attempts, one throttle per kind. One per engine: the loopback and LAN servers share it, so
 * a second port is no second chance.
 */
export class AttemptThrottles {
  readonly login = new LoginThrottle();
  readonly signup = new LoginThrottle();
  readonly invitation = new LoginThrottle();

  constructor(readonly now: () => number) {}
}

/**
 * Throttles the routes that set `config.throttle`: a refused attempt is never checked (a right password learns
 * nothing), and gets 429 too_many_attempts with Retry-After, or the nearest status its operation declares. The token
 * is taken in the same synchronous step as the check, before the handler's password hash, so a burst of attempts in
 * flight at once gets no more checks than the policy allows; it is given back when the answer is no failure.
 */
export function throttleAttempts(app: App, throttles: AttemptThrottles): void {
  const { now } = throttles;
  // Hooks only on the throttled routes: every other request pays nothing.
  app.addHook('onRoute', (route: RouteOptions) => {
    const kind = route.config?.throttle;
    if (!kind) return;
    const attempt = ATTEMPTS[kind];
    const throttle = throttles[kind];
    const who = (req: FastifyRequest) => ({ account: attempt.account(req), address: req.ip });
    const check = (req: FastifyRequest, reply: FastifyReply, done: (error?: Error) => void) => {
      const { waitMs: wait, taken } = throttle.take(who(req), now());
      if (taken) {
        req.throttleTaken = taken;
        return done();
      }
      const seconds = Math.max(1, Math.ceil(wait / 1000));
      reply.header('retry-after', String(seconds));
      done(new ServiceError('too_many', 'too_many_attempts', `Too many failed attempts: try again in ${seconds} s.`));
    };
    const record = (req: FastifyRequest, reply: FastifyReply, done: () => void) => {
      const taken = req.throttleTaken;
      if (!taken) return done();
      const status = reply.statusCode;
      if ((attempt.failures as readonly number[]).includes(status)) return done();
      if (status < 300) throttle.succeeded(who(req), taken, now());
      else throttle.notFailed(taken, now());
      done();
    };
    route.preHandler = [...asArray(route.preHandler), check];
    route.onResponse = [...asArray(route.onResponse), record];
  });
}

const asArray = <T>(hook: T | T[] | undefined): T[] => (hook === undefined ? [] : Array.isArray(hook) ? hook : [hook]);
