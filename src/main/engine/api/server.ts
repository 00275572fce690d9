import swagger from '@fastify/swagger';
import Fastify, { type FastifyRequest } from 'fastify';
import { readFileSync } from 'node:fs';
import { authenticate } from '../services/auth.js';
import type { EngineContext } from '../services/context.js';
import { sendError } from './errors.js';
import type { App } from './http.js';
import { accountRoutes } from './routes/account.js';
import { billingRoutes } from './routes/billing.js';
import { invitationRoutes } from './routes/invitations.js';
import { keyRoutes } from './routes/keys.js';
import { labRoutes } from './routes/lab.js';
import { organizationRoutes } from './routes/organizations.js';
import { deviceControlRoutes } from './routes/device-control.js';
import { deviceRoutes } from './routes/devices.js';
import { fleetRoutes } from './routes/fleet.js';
import { sessionRoutes } from './routes/sessions.js';
import { validatorCompiler } from './validation.js';

export const API_PREFIX = '/api/v1';
const BODY_LIMIT = 1024 * 1024;

const SPEC_TAGS = [
  'Account', 'Organizations', 'Members', 'Invitations', 'API Keys', 'Sessions', 'Instances', 'Devices', 'Chats',
  'Billing', 'Test Results', 'Files', 'Apps', 'Extensions',
];

/** Builds the HTTP server: one Fastify app, every route under /api/v1 with a schema, errors in one shape. */
export async function buildServer(ctx: EngineContext, version: string): Promise<App> {
  const tls = ctx.config.tls;
  const app = Fastify({
    ...(tls ? { https: { cert: readFileSync(tls.certFile), key: readFileSync(tls.keyFile) } } : {}),
    bodyLimit: BODY_LIMIT,
    logger: ctx.config.logLevel === 'silent' ? false : { level: ctx.config.logLevel, redact: ['req.headers.authorization'] },
    // One logger for all requests: a child logger per request costs a quarter of a cheap request's time.
    childLoggerFactory: (logger) => logger,
    // Long-lived connections (SSE, terminals) must not hold a shutdown forever; idle keep-alives close at once.
    forceCloseConnections: 'idle',
    return503OnClosing: true,
  }).withTypeProvider() as unknown as App;

  app.setValidatorCompiler(validatorCompiler());
  app.setErrorHandler((error, request, reply) => sendError(request, reply, error as Error));
  app.setNotFoundHandler((request, reply) =>
    reply.code(404).send({ error: { code: 'route_not_found', message: `No route ${request.method} ${request.url.split('?')[0]}.` } }),
  );

  // Operations without a body ignore whatever was sent, and an empty body is no body at all.
  const parseJson = app.getDefaultJsonParser('error', 'remove');
  app.removeContentTypeParser('application/json');
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (request: FastifyRequest, body, done) => {
    if (!request.routeOptions.schema?.body || body === '') return done(null, undefined);
    parseJson(request, body as string, done);
  });

  // Connections that finish a response during shutdown close right after it, so that keep-alive clients do not
  // hold close() open. (A per-response hook would do the same at a cost on every request.)
  app.addHook('preClose', async () => {
    app.server.keepAliveTimeout = 1;
  });

  // A callback hook rather than an async one: an API key is checked without a promise on every request.
  app.addHook('onRequest', (request, _reply, done) => {
    if (request.is404 || request.routeOptions.config.public) return done();
    try {
      const caller = authenticate(ctx, request.headers.authorization);
      if (!(caller instanceof Promise)) {
        request.caller = caller;
        return done();
      }
      caller.then((c) => {
        request.caller = c;
        done();
      }, done);
    } catch (error) {
      done(error as Error);
    }
  });

  await app.register(swagger, {
    openapi: {
      openapi: '3.1.0',
      info: {
        title: 'Benchtop: Device and Build-Machine Service API',
        version: '2.1.0',
        description: 'The Device and Build-Machine Service API, served by a private device lab. Extensions are tagged Extensions.',
      },
      tags: SPEC_TAGS.map((name) => ({ name })),
      components: {
        securitySchemes: { bearer: { type: 'http', scheme: 'bearer', description: 'mob_<secret> API key or interactive JWT' } },
      },
    },
  });

  await app.register(async (api) => {
    const a = api as unknown as App;
    labRoutes(a, ctx, version);
    accountRoutes(a, ctx);
    keyRoutes(a, ctx);
    invitationRoutes(a, ctx);
    organizationRoutes(a, ctx);
    billingRoutes(a, ctx);
    sessionRoutes(a, ctx);
    deviceRoutes(a, ctx);
    deviceControlRoutes(a, ctx);
    fleetRoutes(a, ctx);
    a.get('/openapi.json', { config: { public: true }, schema: { tags: ['Extensions'], operationId: 'openapi', summary: 'This OpenAPI 3.1 document' } }, () => app.swagger());
  }, { prefix: API_PREFIX });

  app.get('/', { config: { public: true }, schema: { hide: true } }, (_req, reply) =>
    reply.type('text/html').send(
      '<!doctype html><title>Benchtop</title><h1>Benchtop</h1><p>The lab is running. The API is at <a href="/api/v1/openapi.json">/api/v1</a>.</p>',
    ),
  );

  return app;
}
