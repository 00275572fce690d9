import { randomBytes } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { buildServer, type ApiServices } from './api/server.js';
import type { App } from './api/http.js';
import { LanServer } from './api/lan-server.js';
import { BlobStore } from './blobs/blob-store.js';
import { isLoopback, type EngineConfig } from './config.js';
import { ensureLabOwner } from './services/accounts.js';
import { issueToken } from './services/auth.js';
import type { EngineContext } from './services/context.js';
import { adbAddressOf, isLanSharingOn, labOwnerId, labQuotas, requireLabOwner } from './services/lab.js';
import { createFleet, type Fleet } from './fleet/index.js';
import { DeviceControl } from './services/device-control.js';
import { DeviceAllocator, type AppFiles } from './services/devices.js';
import { FileManager } from './services/files.js';
import { Chats } from './services/chats.js';
import { HostSecretStore } from './services/host-secrets.js';
import { InstanceManager } from './services/instances.js';
import { MacHosts } from './services/mac-hosts.js';
import { FileSecretStore, SECRETS_FILE, type SecretStore } from './secrets.js';
import { openDb } from './store/db.js';
import { createStores } from './store/index.js';
import { settingStore } from './store/settings.js';
import type { Db } from './store/db.js';

export const VERSION = '0.1.0';
/** Expired files and unreferenced blobs are swept this often (and at start). */
const FILE_SWEEP_INTERVAL_MS = 3600 * 1000;

export interface Engine {
  /** Opens the database, creates the lab owner on first start, and listens. */
  start(): Promise<{ url: string; owner: { created: boolean; email: string; generatedPassword?: string } }>;
  /** Finishes in-flight requests, then closes the database. Safe to call twice. */
  stop(): Promise<void>;
  readonly url: string;
  /** An interactive token for the lab owner, for the desktop window, which signs in without a password. */
  ownerToken(): Promise<{ token: string; expiresAt: number }>;
  readonly context: EngineContext;
}

/** The token key lives in the database, which lives in the data dir (0700): one secret per lab. */
function tokenSecretOf(db: Db): Uint8Array {
  const settings = settingStore(db);
  let secret = settings.get('token_secret');
  if (!secret) {
    secret = randomBytes(32).toString('base64');
    settings.set('token_secret', secret);
  }
  return Buffer.from(secret, 'base64');
}

/**
 * `secrets` replaces the 0600 file in the data dir: the desktop app passes the OS keychain. `nativeBinding` is the
 * better-sqlite3 addon to load instead of the Node build: the desktop app's, built for Electron's ABI.
 */
export function createEngine(
  config: EngineConfig,
  options: { now?: () => number; secrets?: SecretStore; nativeBinding?: string } = {},
): Engine {
  let db: Db | undefined;
  let app: App | undefined;
  let ctx: EngineContext | undefined;
  let url = '';
  let stopping: Promise<void> | undefined;
  let fleet: Fleet | undefined;
  let fleetReady: Promise<void> | undefined;
  let instanceManager: InstanceManager | undefined;

  const context = () => {
    if (!ctx) throw new Error('The engine has not started.');
    return ctx;
  };

  return {
    async start() {
      if (!isLoopback(config.host) && !config.tls) {
        throw new Error(
          `BENCHTOP_HOST=${config.host} would serve plain HTTP beyond this machine. LAN sharing is HTTPS only: ` +
            'set BENCHTOP_TLS_CERT and BENCHTOP_TLS_KEY to PEM files, or keep the default 127.0.0.1.',
        );
      }
      db = openDb(config.dataDir, { nativeBinding: options.nativeBinding });
      const log = (message: string) => {
        if (config.logLevel !== 'silent') console.warn(`[benchtop] ${message}`);
      };
      fleet = createFleet({ ...config, adb: adbAddressOf(config, settingStore(db)) }, log);
      ctx = {
        config,
        stores: createStores(db),
        blobs: new BlobStore(join(config.dataDir, 'blobs')),
        now: options.now ?? Date.now,
        tokenSecret: tokenSecretOf(db),
        secrets: options.secrets ?? new FileSecretStore(join(config.dataDir, SECRETS_FILE)),
      } as EngineContext;
      const c = ctx;
      const api = () => services;
      ctx.lanSharing = new LanServer(config, (https) => buildServer(c, api(), VERSION, { https }), c.now);
      ctx.retargetAdb = fleet.retarget?.bind(fleet);
      const appFiles: AppFiles = { readyFile: (scope, ref) => c.files.readyFile(scope, ref), pathOf: (file) => c.files.pathOf(file) };
      ctx.devices = new DeviceAllocator(ctx.stores, fleet, appFiles, ctx.now, {
        deviceQuota: () => labQuotas(c).devices,
        graceMs: config.deviceGraceSeconds * 1000,
        prepareTimeoutMs: 60_000,
        log,
      });
      const control = new DeviceControl(ctx.stores, ctx.devices, fleet, appFiles, { screenMaxFps: config.screenMaxFps });
      const hostSecrets = new HostSecretStore(ctx.secrets);
      const instances = new InstanceManager(ctx.stores, hostSecrets, ctx.now, {
        instanceQuota: () => labQuotas(c).instances,
        terminalIdleMs: config.terminalIdleSeconds * 1000,
        checkIntervalMs: config.hostCheckIntervalSeconds * 1000,
        graceMs: config.hostGraceSeconds * 1000,
        log,
      });
      instanceManager = instances;
      const macHosts = new MacHosts(ctx.stores, hostSecrets, instances, ctx.now, { requireLabOwner: (caller) => requireLabOwner(c, caller) });
      const services: ApiServices = { allocator: ctx.devices, control, instances, macHosts };
      ctx.files = new FileManager(ctx, { sweepIntervalMs: FILE_SWEEP_INTERVAL_MS, log });
      ctx.chats = new Chats(ctx, control, { toolTimeoutMs: config.assistantToolTimeoutSeconds * 1000, log });
      ctx.chats.recover();
      const owner = await ensureLabOwner(ctx);
      app = await buildServer(ctx, services, VERSION);
      await app.listen({ host: config.host, port: config.port });
      // LAN sharing stays on across restarts; a port taken meanwhile leaves it off (and says so) rather than the lab.
      if (isLanSharingOn(ctx.stores.settings)) {
        await ctx.lanSharing.enable().catch((error: Error) => log(`LAN sharing is off: ${error.message}`));
      }
      // Mac hosts are checked over SSH in the background; each one's first check reconciles its instances.
      instances.start();
      ctx.files.start();
      // The fleet comes up after the API answers: reading the phones, or starting an adb server, must not hold up
      // health or login. Until then allocations queue, and the allocator serves them once it knows the phones.
      const devices = ctx.devices;
      const started = fleet;
      devices.listen();
      fleetReady = started.start().then(() => {
        if (!stopping) devices.reconcile();
      });
      const { port } = app.server.address() as AddressInfo;
      const host = config.host.includes(':') ? `[${config.host}]` : config.host;
      url = `${config.tls ? 'https' : 'http'}://${host}:${port}`;
      return { url, owner };
    },
    stop() {
      stopping ??= (async () => {
        await fleetReady;
        await ctx?.chats?.stop();
        await instanceManager?.stop();
        ctx?.devices?.stop();
        await ctx?.files?.stop();
        await fleet?.stop();
        await ctx?.lanSharing?.disable();
        await app?.close();
        db?.close();
      })();
      return stopping;
    },
    get url() {
      return url;
    },
    async ownerToken() {
      const c = context();
      const owner = c.stores.users.get(labOwnerId(c)!)!;
      return issueToken(c, owner);
    },
    get context() {
      return context();
    },
  };
}
