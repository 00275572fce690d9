import swagger from '@fastify/swagger';
import websocket from '@fastify/websocket';
import Fastify, { type FastifyRequest } from 'fastify';
import { readFileSync } from 'node:fs';
import type { EngineConfig } from '../config.js';
import type { Accounts } from '../services/accounts.js';
import type { AssistantSettings } from '../services/assistant-settings.js';
import type { Auth } from '../services/auth.js';
import type { Billing } from '../services/billing.js';
import type { Chats } from '../services/chats.js';
import type { DeviceControl } from '../services/device-control.js';
import type { DeviceAllocator } from '../services/devices.js';
import type { FileManager } from '../services/files.js';
import type { InstanceManager } from '../services/instances.js';
import type { Invitations } from '../services/invitations.js';
import type { Keys } from '../services/keys.js';
import type { Membership } from '../services/membership.js';
import type { Scope } from '../services/scope.js';
import type { LabOwner } from '../services/lab-owner.js';
import type { LabSettingsService } from '../services/lab-settings.js';
import type { Backups } from '../services/backups.js';
import type { Metrics } from '../services/metrics.js';
import type { Providers } from '../services/providers.js';
import type { MacHosts } from '../services/mac-hosts.js';
import type { Organizations } from '../services/organizations.js';
import type { RemoteConnect } from '../services/remote-connect.js';
import type { SessionLifecycle } from '../services/session-lifecycle.js';
import type { Sessions } from '../services/sessions.js';
import type { TestResults } from '../services/test-results.js';
import type { IdleRelease } from '../services/idle-release.js';
import type { Reservations } from '../services/reservations.js';
import type { UsageReport } from '../services/usage.js';
import type { WebDriverRuns } from '../services/webdriver.js';
import { webDriverRoutes } from './webdriver/route.js';
import { webDriverRunRoutes } from './routes/webdriver-runs.js';
import { allowedMethods } from './allowed-methods.js';
import type { MultipartUploads } from './multipart-upload.js';
import { invalid } from '../domain/errors.js';
import { jsonTooDeep, MAX_JSON_DEPTH } from '../domain/json-depth.js';
import { sendError } from './errors.js';
import { API_PREFIX } from './prefix.js';
import { registerGui } from './gui.js';
import { checkHost } from './host-check.js';
import { redactUrl } from './redact.js';
import { MAX_PARAM_LENGTH, RouterErrors } from './router-errors.js';
import { boundedClose } from './shutdown.js';
import { throttleAttempts, type AttemptThrottles } from './throttle.js';
import type { App } from './http.js';
import { holdConnection } from './member-connections.js';
import { accountRoutes } from './routes/account.js';
import { billingRoutes } from './routes/billing.js';
import { chatRoutes } from './routes/chats.js';
import { invitationRoutes } from './routes/invitations.js';
import { keyRoutes } from './routes/keys.js';
import { labRoutes } from './routes/lab.js';
import { labHostRoutes } from './routes/lab-hosts.js';
import { labProviderRoutes } from './routes/lab-providers.js';
import { labAssistantRoutes } from './routes/lab-assistant.js';
import { instanceRoutes } from './routes/instances.js';
import { organizationRoutes } from './routes/organizations.js';
import { deviceControlRoutes } from './routes/device-control.js';
import { phoneToolboxRoutes } from './routes/phone-toolbox.js';
import { deviceRoutes } from './routes/devices.js';
import { fleetRoutes } from './routes/fleet.js';
import { fileRoutes } from './routes/files.js';
import { appRoutes } from './routes/apps.js';
import { sessionExtensionRoutes } from './routes/session-extensions.js';
import { sessionRoutes } from './routes/sessions.js';
import { sharingRoutes } from './routes/sharing.js';
import { remoteConnectRoutes } from './routes/remote-connect.js';
import { testResultRoutes } from './routes/test-results.js';
import { wsRpcRoute } from './ws/route.js';
import { createMcpLab } from './mcp/lab.js';
import { mcpRoutes } from './mcp/route.js';
import { lazySerializers } from './serialization.js';
import { validatorCompiler } from './validation.js';

export { API_PREFIX };
const BODY_LIMIT = 1024 * 1024;
/** The WebSocket subprotocol that carries a bearer, for browsers that cannot set Authorization on a WebSocket. */
const BEARER_PROTOCOL = 'bearer.';
const WEBSOCKET_CLOSE_GRACE_MS = 1000;
/** How long a reboot (REST's, /ws's device.reboot and MCP's lab_restart_device) waits for a phone to come back: a real phone restarts in one to two minutes. */
const REBOOT_TIMEOUT_MS = 180_000;

declare module 'fastify' {
  interface FastifyContextConfig {
    /** The bearer may also come as ?token= or a bearer.<token> subprotocol: for WebSockets opened by a browser. */
    tokenInQuery?: boolean;
    /** Set for routes with a WebSocket handler: an upgrade to any other route is a 404 before the upgrade. */
    upgrades?: boolean;
  }
}

/** A URL with its token (and upload signature) blanked, so that neither reaches a log line. */
const withoutToken = redactUrl;

/** The Authorization header, or, on a route that allows it, the bearer a browser's WebSocket can send. */
function authorizationOf(request: FastifyRequest, tokenInQuery: boolean | undefined): string | undefined {
  const header = request.headers.authorization;
  if (!tokenInQuery) return header;
  // The query is parsed already; what is logged later (an unhandled error's URL) must not carry the token.
  request.raw.url = withoutToken(request.raw.url ?? '');
  if (header) return header;
  const protocol = request.headers['sec-websocket-protocol']
    ?.split(',')
    .map((p) => p.trim())
    .find((p) => p.startsWith(BEARER_PROTOCOL));
  const token = protocol?.slice(BEARER_PROTOCOL.length) ?? (request.query as { token?: unknown }).token;
  return typeof token === 'string' && token !== '' ? `Bearer ${token}` : undefined;
}

const SPEC_TAGS = [
  'Account', 'Organizations', 'Members', 'Invitations', 'API Keys', 'Sessions', 'Instances', 'Devices', 'Chats',
  'Billing', 'Test Results', 'Files', 'Apps', 'Extensions',
];

/**
 * Builds the HTTP server: one Fastify app, every route under /api/v1 with a schema, errors in one shape.
 * `https` makes it serve TLS with that certificate: LAN sharing's second server, on the same context.
 */
/** What the routes call. Each routes module gets only the services it uses. */
export interface ApiServices {
  config: EngineConfig;
  auth: Auth;
  labOwner: LabOwner;
  labSettings: LabSettingsService;
  accounts: Accounts;
  keys: Keys;
  organizations: Organizations;
  membership: Membership;
  invitations: Invitations;
  billing: Billing;
  sessions: Sessions;
  allocator: DeviceAllocator;
  control: DeviceControl;
  reservations: Reservations;
  idleRelease: IdleRelease;
  usage: UsageReport;
  remote: RemoteConnect;
  instances: InstanceManager;
  macHosts: MacHosts;
  providers: Providers;
  metrics: Metrics;
  backups: Backups;
  files: FileManager;
  testResults: TestResults;
  assistant: AssistantSettings;
  chats: Chats;
  uploads: MultipartUploads;
  sessionLifecycle: SessionLifecycle;
  webdriver: WebDriverRuns;
  /** Failed logins, sign-ups and invitation acceptances, counted for both servers; absent when throttling is off. */
  attempts?: AttemptThrottles;
}

export async function buildServer(services: ApiServices, version: string, options: { https?: { cert: string; key: string } } = {}): Promise<App> {
  const { config } = services;
  const tls = config.tls;
  const https = options.https ?? (tls ? { cert: readFileSync(tls.certFile), key: readFileSync(tls.keyFile) } : undefined);
  const routerErrors = new RouterErrors();
  const app = Fastify({
    ...(https ? { https } : {}),
    routerOptions: { maxParamLength: MAX_PARAM_LENGTH },
    frameworkErrors: routerErrors.frameworkError,
    clientErrorHandler: routerErrors.clientError,
    bodyLimit: BODY_LIMIT,
    logger: config.logLevel === 'silent' ? false : {
      level: config.logLevel,
      redact: ['req.headers.authorization'],
      serializers: {
        req: (req: FastifyRequest) => ({ method: req.method, url: withoutToken(req.url), host: req.host, remoteAddress: req.ip, remotePort: req.socket?.remotePort }),
      },
    },
    // One logger for all requests: a child logger per request costs a quarter of a cheap request's time.
    childLoggerFactory: (logger) => logger,
    // Long-lived connections (SSE, terminals) must not hold a shutdown forever; idle keep-alives close at once.
    forceCloseConnections: 'idle',
    schemaController: { compilersFactory: { buildSerializer: lazySerializers } },
    return503OnClosing: true,
  }).withTypeProvider() as unknown as App;

  routerErrors.attach(app);
  app.setValidatorCompiler(validatorCompiler());
  app.setErrorHandler((error, request, reply) => sendError(request, reply, error as Error));
  const allowed = allowedMethods(app);
  app.setNotFoundHandler((request, reply) => {
    const path = request.url.split('?')[0]!;
    const methods = allowed(path);
    // A route that exists under this very method and still did not take the request (a parameter over the router's
    // length) is not found, not refused.
    if (methods.length > 0 && !methods.includes(request.method)) {
      return reply.code(405).header('allow', methods.join(', ')).send({
        error: { code: 'method_not_allowed', message: `${path} answers ${methods.join(', ')}, not ${request.method}.` },
      });
    }
    return reply.code(404).send({ error: { code: 'route_not_found', message: `No route ${request.method} ${path}.` } });
  });

  // Operations without a body ignore whatever was sent, and an empty body is no body at all.
  const parseJson = app.getDefaultJsonParser('error', 'remove');
  app.removeContentTypeParser('application/json');
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (request: FastifyRequest, body, done) => {
    if (!request.routeOptions.schema?.body || body === '') return done(null, undefined);
    if (jsonTooDeep(body as string)) return done(invalid('json_too_deep', `The JSON body nests deeper than ${MAX_JSON_DEPTH} levels.`), undefined);
    parseJson(request, body as string, done);
  });

  // Connections that finish a response during shutdown close right after it, so that keep-alive clients do not
  // hold close() open. (A per-response hook would do the same at a cost on every request.)
  app.addHook('preClose', async () => {
    app.server.keepAliveTimeout = 1;
  });
  boundedClose(app);

  // Before the auth hook: the plugin's own onRequest hook marks an upgrade request, so that a refused upgrade (a 401
  // from the auth hook included) has its socket destroyed after the response instead of held open.
  await app.register(websocket, {
    options: {
      // Viewers only receive: nothing they send needs more room than this.
      maxPayload: 64 * 1024,
      // A browser that offered bearer.<token> fails the connection unless a protocol is echoed; another offered
      // protocol is preferred, so that the token is not repeated back when there is a choice.
      handleProtocols: (protocols) => [...protocols].find((p) => !p.startsWith(BEARER_PROTOCOL)) ?? [...protocols][0] ?? false,
    },
    // The default closes with no code, and waits ws's 30 s close timeout for a peer that does not answer (a laptop
    // asleep on the LAN), holding the shutdown that long; the server's close waits for every upgraded socket.
    preClose(done) {
      for (const socket of this.websocketServer.clients) {
        socket.close(1001, 'Benchtop is shutting down');
        setTimeout(() => socket.terminate(), WEBSOCKET_CLOSE_GRACE_MS).unref();
      }
      // ws calls back only once every client is gone, so the shutdown goes on without waiting for it.
      this.websocketServer.close();
      done();
    },
  });

  checkHost(app, config.allowedHosts);
  if (services.attempts) throttleAttempts(app, services.attempts);
  // Every route with a WebSocket handler says so in its config, so that an upgrade elsewhere can be refused.
  app.addHook('onRoute', (route) => {
    if (route.wsHandler || route.websocket) route.config = { ...route.config, upgrades: true };
  });

  const { auth, membership } = services;
  // A callback hook rather than an async one: an API key is checked without a promise on every request.
  app.addHook('onRequest', (request, reply, done) => {
    request.resolveScope = (caller, organization): Scope => {
      const scope = auth.resolveScope(caller, organization);
      holdConnection(membership, scope, request, reply);
      return scope;
    };
    if (request.is404) return done();
    // routeOptions is built afresh on every read.
    const routeConfig = request.routeOptions.config;
    // An upgrade to a path with no WebSocket (the GUI's catch-all included) is refused before it happens, rather than
    // accepted and closed with no status. The websocket plugin destroys the socket once this answer is sent.
    if (request.ws && !routeConfig.upgrades) {
      reply.code(404).send({ error: { code: 'route_not_found', message: `No WebSocket at ${request.url.split('?')[0]}.` } });
      return;
    }
    if (routeConfig.public) return done();
    try {
      const caller = auth.authenticate(authorizationOf(request, routeConfig.tokenInQuery));
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
    const s = services;
    labRoutes(a, s.labSettings, s.labOwner, s.usage, version);
    accountRoutes(a, s.accounts, s.auth, s.labOwner);
    keyRoutes(a, s.keys);
    invitationRoutes(a, s.invitations);
    organizationRoutes(a, s.organizations);
    billingRoutes(a, s.billing);
    sessionRoutes(a, s.sessions);
    sessionExtensionRoutes(a, s.sessions, s.sessionLifecycle);
    testResultRoutes(a, s.testResults, s.uploads);
    deviceRoutes(a, s.allocator);
    deviceControlRoutes(a, s.control, { rebootTimeoutMs: REBOOT_TIMEOUT_MS });
    remoteConnectRoutes(a, s.remote);
    phoneToolboxRoutes(a, s.control);
    fleetRoutes(a, s.allocator, s.macHosts, s.providers, s.reservations, s.webdriver, s.labOwner);
    sharingRoutes(a, s);
    labHostRoutes(a, s.macHosts);
    labProviderRoutes(a, s.providers, s.metrics, s.backups, s.labOwner);
    instanceRoutes(a, s.instances);
    fileRoutes(a, s.files, s.uploads);
    appRoutes(a, s.files);
    chatRoutes(a, s.chats);
    labAssistantRoutes(a, s.assistant, s.labOwner);
    webDriverRunRoutes(a, s.webdriver);
    a.get('/openapi.json', { config: { public: true }, schema: { tags: ['Extensions'], operationId: 'openapi', summary: 'This OpenAPI 3.1 document' } }, () => app.swagger());
  }, { prefix: API_PREFIX });

  // Outside /api/v1, where the Mobile Next clients look for it: the fleet's URL is wss://<host>/ws.
  wsRpcRoute(app, {
    allocator: services.allocator,
    control: services.control,
    createSession: (scope) => services.sessions.createSession(scope),
    rebootTimeoutMs: REBOOT_TIMEOUT_MS,
  });
  // MCP beside the API, on the same origin and behind the same auth hook; in its own plugin, for its body parsers.
  const lab = createMcpLab(services, { rebootTimeoutMs: REBOOT_TIMEOUT_MS });
  await app.register(async (mcp) => mcpRoutes(mcp as unknown as App, lab, version, services.membership));

  // W3C WebDriver for the whole lab, at the base path Selenium Grid and the clouds use; in its own plugin, for its body parser.
  await app.register(async (wd) => webDriverRoutes(wd as unknown as App, services.webdriver, services.auth));

  await registerGui(app);

  return app;
}
