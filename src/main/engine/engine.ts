import { randomBytes } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import type { App } from './api/http.js';
import { LanServer } from './api/lan-server.js';
import { chatPresenter } from './api/presenters/chats.js';
import { AttemptThrottles } from './api/throttle.js';
import { UploadLimits } from './api/upload-limits.js';
import { buildServer, type ApiServices } from './api/server.js';
import { BlobStore } from './blobs/blob-store.js';
import { isLoopback, type EngineConfig } from './config.js';
import { createFleet, iosLaunch, type Fleet } from './fleet/index.js';
import { FileSecretStore, SECRETS_FILE, type SecretStore } from './secrets.js';
import { Accounts } from './services/accounts.js';
import { AssistantSettings } from './services/assistant-settings.js';
import { Auth } from './services/auth.js';
import { Billing } from './services/billing.js';
import { Chats } from './services/chats.js';
import { DeviceControl } from './services/device-control.js';
import { DeviceAllocator } from './services/devices.js';
import { FileManager } from './services/files.js';
import { HostSecretStore } from './services/host-secrets.js';
import { IdleRelease } from './services/idle-release.js';
import { InstanceManager } from './services/instances.js';
import { SessionLifecycle } from './services/session-lifecycle.js';
import { Invitations } from './services/invitations.js';
import { Keys } from './services/keys.js';
import { Membership } from './services/membership.js';
import { LabOwner } from './services/lab-owner.js';
import { adbAddressOf, isLanSharingOn, isRemoteConnectOnLan, LabSettingsService } from './services/lab-settings.js';
import { labSummary, type LabSummary } from './services/lab-summary.js';
import { MacHosts } from './services/mac-hosts.js';
import { Backups } from './services/backups.js';
import { Heartbeat } from './services/heartbeat.js';
import { Metrics } from './services/metrics.js';
import { Providers } from './services/providers.js';
import { Organizations } from './services/organizations.js';
import { Reservations } from './services/reservations.js';
import { RemoteConnect } from './services/remote-connect.js';
import type { Clock } from './services/scope.js';
import { Sessions } from './services/sessions.js';
import { TestResults } from './services/test-results.js';
import { UsageReport } from './services/usage.js';
import { WebDriverRuns } from './services/webdriver.js';
import { WebDriverApps } from './services/webdriver-apps.js';
import { AppiumServer, type AppiumPlatform } from './fleet/appium/appium-server.js';
import { androidHomeFor, PrivateAdbServer } from './fleet/appium/private-adb.js';
import { endLeftovers } from './fleet/guarded-child.js';
import { formatUsbmuxdAddress } from './fleet/ios/usbmux.js';
import { openDb, type Db } from './store/db.js';
import { RETAIN_ON_FAILURE, type VideoChoice } from './domain/webdriver-capabilities.js';
import { diskFreeBytes } from './services/disk.js';
import { createStores, type Stores } from './store/index.js';
import { settingStore } from './store/settings.js';

export const VERSION = '0.1.0';
/** Expired files and unreferenced blobs are swept this often (and at start). */
const FILE_SWEEP_INTERVAL_MS = 3600 * 1000;
/** Provisioning (or cleaning) a phone that takes longer fails: nothing stays provisioning forever. */
const PREPARE_TIMEOUT_MS = 60_000;
/** Where remote-connect listens unless the lab owner puts it on the LAN. */
const LOOPBACK = '127.0.0.1';

/** Every service of a running engine, wired once in wire(): what the API, the desktop shell and tests call. */
export type EngineServices = ReturnType<typeof wire>;

export interface Engine {
  /** Opens the database, creates the lab owner on first start, and listens. */
  start(): Promise<{ url: string; owner: { created: boolean; email: string; generatedPassword?: string } }>;
  /**
   * Ends running messages, finishes in-flight requests, then closes the database. Safe to call twice.
   * `beforeFleetStops` runs once the chats have stopped, while the fleet still tracks phones: where phones that
   * leave with the engine (the demo's) detach, so that a message running on one ends failed, not completed on a
   * tool error.
   */
  stop(options?: { beforeFleetStops?: () => Promise<void> }): Promise<void>;
  readonly url: string;
  /** An interactive token for the lab owner, for the desktop window, which signs in without a password. */
  ownerToken(): Promise<{ token: string; expiresAt: number }>;
  /** Phones and instances at a glance, for the tray. */
  summary(): LabSummary;
  /** The running engine's services and stores: for the desktop shell, demo mode and tests, never for modules. */
  readonly services: EngineServices;
  readonly stores: Stores;
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
 * The composition root: every service gets what it uses as constructor arguments, in dependency order, so that a
 * reader can see here what each one depends on. Nothing else in the engine builds a service.
 */
function wire(
  config: EngineConfig,
  stores: Stores,
  fleet: Fleet,
  parts: { db: Db; blobs: BlobStore; secrets: SecretStore; tokenSecret: Uint8Array; now: Clock; freePort?: () => Promise<number>; log: (message: string) => void },
) {
  const { db, blobs, secrets, tokenSecret, now, log } = parts;
  const auth = new Auth(stores, tokenSecret, config, now);
  const labOwner = new LabOwner(stores);
  // LAN sharing serves the same API over TLS: built from these services when the lab owner switches it on.
  const lanSharing = new LanServer(config, (https) => buildServer(services, VERSION, { https }), now);
  // The switch closes remote connections on the old address; `remote` is made below and only called later.
  const labSettings = new LabSettingsService(stores, config, lanSharing, secrets, fleet.retarget?.bind(fleet), () => remote.rehost(), () => {
    void files.sweep().catch((error: Error) => log(`sweeping files failed: ${error.message}`));
  });
  const files = new FileManager(stores, blobs, tokenSecret, config, now, {
    sweepIntervalMs: FILE_SWEEP_INTERVAL_MS,
    log,
    testResultFilesDays: () => labSettings.testResultFilesDays(),
  });
  const allocator = new DeviceAllocator(stores, fleet, files, now, {
    deviceQuota: () => labSettings.quotas().devices,
    graceMs: config.deviceGraceSeconds * 1000,
    prepareTimeoutMs: PREPARE_TIMEOUT_MS,
    reservationWarningMs: config.reservationWarningSeconds * 1000,
    log,
  });
  const reservations = new Reservations(stores, allocator, now, { maxHours: () => labSettings.reservationMaxHours() });
  const idleRelease = new IdleRelease(stores, allocator, reservations, now, {
    idleSeconds: () => labSettings.deviceIdleSeconds(),
    idleWarningMs: config.idleWarningSeconds * 1000,
    reservationWarningMs: config.reservationWarningSeconds * 1000,
    checkMs: config.sharingCheckSeconds * 1000,
    flushMs: config.activityFlushSeconds * 1000,
    log,
  });
  // A phone a WebDriver run drives is watch-only (`webdriver` is made below and only asked later).
  const control = new DeviceControl(stores, allocator, fleet, files, idleRelease, { screenMaxFps: config.screenMaxFps, drivenBy: (id) => webdriver.heldBy(id)?.by });
  const remote = new RemoteConnect(stores, control, fleet, now, {
    ports: config.remotePorts,
    restMs: config.remotePortRestSeconds * 1000,
    // Plain TCP on the LAN only when the lab owner switched it on (and the machine still has a LAN address).
    bindHost: () => (isRemoteConnectOnLan(stores.settings) && lanSharing.lanAddress()) || LOOPBACK,
    authTimeoutMs: config.remoteAuthTimeoutSeconds * 1000,
    labAdb: () => adbAddressOf(config, stores.settings),
    adbServerOf: (serial) => fleet.adbServerOf(serial),
    usbmuxd: config.usbmuxd,
    wdaPort: (serial, port) => fleet.wdaPort(serial, port),
    lan: () => {
      const { enabled, urls, certificateSha256 } = lanSharing.status();
      return enabled && urls[0] && certificateSha256 ? { origin: urls[0], certificateSha256 } : undefined;
    },
    log,
  });
  const testResults = new TestResults(stores, blobs, now);
  const sessions = new Sessions(stores, now);
  // Apps a WebDriver session names by URL are downloaded as uploads are received: bounded by the same size and silence.
  const apps = new WebDriverApps(files, blobs, { maxBytes: config.maxAssetBytes, timeoutMs: config.uploadIdleSeconds * 1000 });
  // The lab owner's "on" is the client's true: a video kept whatever the run's end.
  const defaultVideo = (): VideoChoice => ({ on: true, off: false, 'retain-on-failure': RETAIN_ON_FAILURE } as const)[labSettings.webDriverVideo()];
  const webdriver = webDriverRuns(config, stores, { allocator, remote, control, idleRelease, testResults, sessions, blobs, fleet, apps, now, freePort: parts.freePort, defaultVideo, log });
  // A WebDriver session on the phone ends first (Appium cleans up through the remote connection), then remote
  // connections drop, and only then does the released phone's cleanup start, so that nobody races it.
  allocator.onRelease((row) => {
    const ending = webdriver.onReleased(row);
    if (ending) return ending.finally(() => remote.onReleased(row));
    remote.onReleased(row);
  });
  // Traffic on a remote connection is a person or a job using the phone: it keeps the phone from an idle release.
  remote.on('activity', (allocationId: string) => idleRelease.touch(allocationId));
  const hostSecrets = new HostSecretStore(secrets);
  const instances = new InstanceManager(stores, hostSecrets, now, {
    instanceQuota: () => labSettings.quotas().instances,
    terminalIdleMs: config.terminalIdleSeconds * 1000,
    checkIntervalMs: config.hostCheckIntervalSeconds * 1000,
    graceMs: config.hostGraceSeconds * 1000,
    log,
  });
  const providers = new Providers(stores, new HostSecretStore(secrets, 'provider'), fleet, now, {
    requireLabOwner: (caller) => labOwner.require(caller),
    timing: { checkIntervalMs: config.providerCheckMs, probeTimeoutMs: config.providerProbeTimeoutMs, connectTimeoutMs: 5000, backoffMaxMs: config.providerBackoffMaxMs },
    log,
    wdaBundleId: config.wdaBundleId,
    iosLaunch: { goIos: iosLaunch(config).goIos, ddiPath: config.ddiPath },
  });
  const assistant = new AssistantSettings(stores, secrets);
  const keys = new Keys(stores, now);
  const membership = new Membership({ allocator, reservations, remote, keys });
  const organizations = new Organizations(stores, now, membership);
  const invitations = new Invitations(stores, organizations, config, now, { tokenSecret, lanUrls: () => lanSharing.status().urls });
  const services: ApiServices & { lanSharing: LanServer; heartbeat: Heartbeat; webdriver: WebDriverRuns } = {
    config,
    auth,
    labOwner,
    labSettings,
    lanSharing,
    accounts: new Accounts(stores, labOwner, labSettings, invitations, config, now),
    keys,
    organizations,
    membership,
    invitations,
    billing: new Billing(stores, config, now),
    sessions,
    sessionLifecycle: new SessionLifecycle(stores, allocator, instances, now),
    allocator,
    control,
    reservations,
    idleRelease,
    usage: new UsageReport(stores, now),
    heartbeat: new Heartbeat(stores, now, log),
    remote,
    instances,
    providers,
    metrics: new Metrics(stores, fleet, providers),
    backups: new Backups(db, blobs, now, { dir: config.backupDir ?? join(config.dataDir, 'backups'), intervalMs: config.backupIntervalSeconds * 1000, keep: config.backupKeep, log }),
    macHosts: new MacHosts(stores, hostSecrets, instances, now, { requireLabOwner: (caller) => labOwner.require(caller) }),
    files,
    testResults,
    webdriver,
    assistant,
    chats: new Chats(stores, sessions, control, assistant, blobs, chatPresenter, now, {
      toolTimeoutMs: config.assistantToolTimeoutSeconds * 1000,
      log,
    }),
    uploads: {
      blobs,
      maxBytes: config.maxAssetBytes,
      limits: new UploadLimits({ idleMs: config.uploadIdleSeconds * 1000, perCaller: config.uploadsPerCaller }),
    },
    ...(config.throttleLogins ? { attempts: new AttemptThrottles(now) } : {}),
  };
  return services;
}

/**
 * WebDriver for the whole lab: real Appium, a process for each platform (each started by its platform's first
 * session), reaching Android phones through a private adb server of its own and iPhones through their WebDriverAgent URL.
 */
function webDriverRuns(config: EngineConfig, stores: Stores, parts: Omit<ConstructorParameters<typeof WebDriverRuns>[1], 'activity' | 'appium' | 'phones'> & { idleRelease: IdleRelease; fleet: Fleet; now: Clock; freePort?: () => Promise<number>; defaultVideo: () => VideoChoice; log: (message: string) => void }) {
  const home = join(config.dataDir, 'appium');
  const pids = join(home, 'pids');
  // Before anything new starts: what a crashed run of this data dir left (its Appium, its private adb server).
  endLeftovers(pids, parts.log);
  const androidHome = config.adb ? androidHomeFor(home) : undefined;
  const usbmuxd = config.usbmuxd && !('open' in config.usbmuxd) ? formatUsbmuxdAddress(config.usbmuxd) : undefined;
  const appiumFor = (platform: AppiumPlatform, env: Record<string, string>) =>
    new AppiumServer({ platform, home: join(home, platform), env, startTimeoutMs: 60_000, pidFile: join(pids, `appium-${platform}.json`), freePort: parts.freePort, log: parts.log });
  const appium = {
    android: appiumFor('android', androidHome ? { ANDROID_HOME: androidHome } : {}),
    ios: appiumFor('ios', usbmuxd ? { USBMUXD_SOCKET_ADDRESS: usbmuxd } : {}),
  };
  const { idleRelease, fleet, now, freePort, log, defaultVideo, ...rest } = parts;
  return new WebDriverRuns(stores, { ...rest, activity: idleRelease, appium, phones: fleet }, now, {
    privateAdb: androidHome ? new PrivateAdbServer(join(androidHome, 'platform-tools', 'adb'), join(home, 'adb'), { pidFile: join(pids, 'adb.json'), freePort }) : undefined,
    pollMs: config.webDriverPollMs,
    retryWindowMs: config.webDriverRetrySeconds * 1000,
    freePort,
    defaultVideo,
    disk: { freeBytes: () => diskFreeBytes(config.dataDir), minFreeForVideoBytes: config.videoMinFreeMb * 1024 ** 2 },
    log,
  });
}

/**
 * `secrets` replaces the 0600 file in the data dir: the desktop app passes the OS keychain. `nativeBinding` is the
 * better-sqlite3 addon to load instead of the Node build: the desktop app's, built for Electron's ABI. `freePort` is
 * where the ports the lab gives Appium and its adb server come from (the OS's free ones): a test takes them first.
 */
export function createEngine(
  config: EngineConfig,
  options: { now?: () => number; secrets?: SecretStore; nativeBinding?: string; freePort?: () => Promise<number> } = {},
): Engine {
  let db: Db | undefined;
  let app: App | undefined;
  let running: { services: EngineServices; stores: Stores } | undefined;
  let url = '';
  let stopping: Promise<void> | undefined;
  let fleet: Fleet | undefined;
  let fleetReady: Promise<void> | undefined;

  const started = () => {
    if (!running) throw new Error('The engine has not started.');
    return running;
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
      const stores = createStores(db);
      const services = wire(config, stores, fleet, {
        db,
        blobs: new BlobStore(join(config.dataDir, 'blobs')),
        secrets: options.secrets ?? new FileSecretStore(join(config.dataDir, SECRETS_FILE)),
        tokenSecret: tokenSecretOf(db),
        now: options.now ?? Date.now,
        freePort: options.freePort,
        log,
      });
      running = { services, stores };
      // First: the time the lab was down is cut out of every interval held across it, before anything meters.
      services.heartbeat.start();
      services.chats.recover();
      // A first start hashes the owner's password (scrypt, about 30 ms on libuv's thread pool) while the routes are
      // built on the main thread: neither waits for the other.
      const ownerReady = services.accounts.ensureLabOwner();
      // Awaited below; if building the routes fails first, the start fails with that, not an unhandled rejection.
      ownerReady.catch(() => undefined);
      app = await buildServer(services, VERSION);
      const owner = await ownerReady;
      await app.listen({ host: config.host, port: config.port });
      // LAN sharing stays on across restarts; a port taken meanwhile leaves it off (and says so) rather than the lab.
      if (isLanSharingOn(stores.settings)) {
        await services.lanSharing.enable().catch((error: Error) => log(`LAN sharing is off: ${error.message}`));
      }
      // Mac hosts are checked over SSH in the background; each one's first check reconciles its instances.
      services.instances.start();
      services.files.start();
      // The fleet comes up after the API answers: reading the phones, or starting an adb server, must not hold up
      // health or login. Until then allocations queue, and the allocator serves them once it knows the phones.
      const { allocator } = services;
      const phones = fleet;
      allocator.listen();
      services.idleRelease.start();
      fleetReady = phones.start().then(() => {
        if (stopping) return;
        allocator.reconcile();
        // Runs the engine died with end now that the allocator can release their phones.
        services.webdriver.recover();
        // Providers join once the local fleet is reconciled: their phones arrive as they are read, like a phone plugged in.
        services.providers.start();
      });
      services.backups.start();
      const { port } = app.server.address() as AddressInfo;
      const host = config.host.includes(':') ? `[${config.host}]` : config.host;
      url = `${config.tls ? 'https' : 'http'}://${host}:${port}`;
      return { url, owner };
    },
    stop(options = {}) {
      stopping ??= (async () => {
        await fleetReady;
        const services = running?.services;
        await services?.webdriver.stop();
        services?.remote.stop();
        await services?.chats.stop();
        await options.beforeFleetStops?.();
        await services?.instances.stop();
        services?.idleRelease.stop();
        services?.allocator.stop();
        services?.control.close();
        await services?.files.stop();
        await services?.providers.stop();
        await services?.backups.stop();
        await fleet?.stop();
        await services?.lanSharing.disable();
        await app?.close();
        services?.heartbeat.stop();
        db?.close();
      })();
      return stopping;
    },
    get url() {
      return url;
    },
    async ownerToken() {
      const { services, stores } = started();
      return services.auth.issueToken(stores.users.get(services.labOwner.id()!)!);
    },
    summary() {
      const { services, stores } = started();
      return labSummary(stores, services.allocator);
    },
    get services() {
      return started().services;
    },
    get stores() {
      return started().stores;
    },
  };
}
