import { homedir } from 'node:os';
import { join } from 'node:path';

import { DEFAULT_PLANS, type PlanAllowance } from '../../shared/plans.js';
import { DEFAULT_USBMUXD_SOCKET, parseUsbmuxdAddress, type UsbmuxdAddress } from './fleet/ios/usbmux.js';
import { findGoIos } from './fleet/ios/tunnel.js';
import { DEFAULT_WDA_BUNDLE_ID, findXcrun } from './fleet/ios/wda-launcher.js';

export { DEFAULT_PLANS, type PlanAllowance };

export interface EngineConfig {
  host: string;
  port: number;
  /** PEM files; required to listen beyond loopback, because LAN sharing is HTTPS only. */
  tls?: { certFile: string; keyFile: string };
  /** Where LAN sharing (a lab setting) serves HTTPS on all interfaces, with the lab's self-signed certificate. */
  lanPort: number;
  dataDir: string;
  /** The lab owner's account, created on the first start with an empty data dir. */
  ownerEmail: string;
  ownerPassword?: string;
  /** Interactive token lifetime. */
  tokenTtlSeconds: number;
  invitationTtlDays: number;
  deviceConcurrencyQuota: number;
  /** The adb server to track Android phones through; null switches the Android fleet off. */
  adb: { host: string; port: number } | null;
  /** The usbmuxd to track iPhones through (its socket, or host:port); null switches the iOS fleet off. */
  usbmuxd: UsbmuxdAddress | null;
  /** Simulated iPhones to attach at start (the demo mode), on a simulated usbmuxd. */
  demoIphones: number;
  /** The bundle id of WebDriverAgent's runner the engine starts on an iPhone whose WDA is not answering. */
  wdaBundleId: string;
  /** The xcrun whose devicectl starts WDA on iOS 17+ (a Mac with Xcode 15+); null where there is none. */
  xcrun: string | null;
  /** go-ios's binary, which opens userspace tunnels to iOS 17.4+ phones (BENCHTOP_GO_IOS; default npm's go-ios); null: none. */
  goIos: string | null;
  /**
   * The personalized Developer Disk Image the lab mounts on iOS 17+ phones that lack it (BENCHTOP_DDI_PATH): the Restore
   * folder of Xcode's image, with BuildManifest.plist, Image.dmg and Image.dmg.trustcache. The lab owner's setting alone.
   */
  ddiPath: string | null;
  /** How long an unplugged allocated phone may stay away before it is released as device_lost. */
  deviceGraceSeconds: number;
  /** Live screen frames per second at most (0: as fast as the phone answers). */
  screenMaxFps: number;
  /** Simulated phones to attach at start (the demo mode): a lab to try with no phone at hand. */
  demoPhones: number;
  instanceConcurrencyQuota: number;
  /** How often each Mac host is checked over SSH (fractions of a second are fine, for tests). */
  hostCheckIntervalSeconds: number;
  /** How long a ready instance survives its host being unreachable before it is failed. */
  hostGraceSeconds: number;
  /** How long an instance's terminal shell outlives its last viewer, so that a reconnect resumes the same shell. */
  terminalIdleSeconds: number;
  /** The largest test-result asset an upload may carry, in bytes. */
  maxAssetBytes: number;
  /** An upload that sends nothing for this long is ended and its staged bytes removed (fractions are fine, for tests). */
  uploadIdleSeconds: number;
  /** How many uploads one caller (an API key, a user, a signed URL's client address) may have in flight at once. */
  uploadsPerCaller: number;
  /** How long a stored file (an app binary) is kept after its last upload. */
  fileExpiryDays: number;
  /** The default of the lab setting testResultFiles.keepDays: a test result's files are removed this long after they were stored (0: kept). */
  testResultFilesDays: number;
  plans: Record<string, PlanAllowance>;
  /** The default of the lab setting deviceIdleSeconds: an allocation idle this long is released (0: never). */
  deviceIdleSeconds: number;
  /** The least non-zero deviceIdleSeconds the lab setting accepts (10; tests lower it to wait seconds, not minutes). */
  deviceIdleMinSeconds: number;
  /** How long before an idle release the holder is warned. */
  idleWarningSeconds: number;
  /** How long before a reservation starts another organization's holder of the phone is warned. */
  reservationWarningSeconds: number;
  /** The default of the lab setting reservationMaxHours. */
  reservationMaxHours: number;
  /** How often idle deadlines, warnings and reservation windows are checked (fractions of a second are fine, for tests). */
  sharingCheckSeconds: number;
  /** How often activity held in memory is written to SQLite: a SIGKILL loses at most this much of it. */
  activityFlushSeconds: number;
  /** How long one assistant tool call (a tap, a screenshot) may take before it fails. */
  assistantToolTimeoutSeconds: number;
  /** Quiet in tests; the headless entry prints its own lines. */
  logLevel: 'silent' | 'error' | 'warn' | 'info';
  /** Host names, beyond addresses, localhost and this machine's name, that requests may name (DNS rebinding). */
  allowedHosts: string[];
  /** How often each provider's adb server is checked through SSH, and how long a check may take, in ms. */
  providerCheckMs: number;
  providerProbeTimeoutMs: number;
  /** The longest wait between reconnection attempts to a provider that is down, in ms. */
  providerBackoffMaxMs: number;
  /** Online backups of the database this often (0: only on demand), into backupDir, keeping backupKeep of them. */
  backupIntervalSeconds: number;
  /** null: `backups` in the data dir. */
  backupDir: string | null;
  backupKeep: number;
  /** Whether failed logins, sign-ups and invitation acceptances are throttled (BENCHTOP_LOGIN_THROTTLE=off: not). */
  throttleLogins: boolean;
  /** Remote connect: the ports its listeners take (outside adb's emulator range 5555-5585). */
  remotePorts: { first: number; last: number };
  /** How long a released remote-connect port rests before reuse: the user's adb keeps redialling it (fractions for tests). */
  remotePortRestSeconds: number;
  /** A host that has not signed in to a remote-connect bridge within this long is dropped. */
  remoteAuthTimeoutSeconds: number;
  /** How long /wd/hub keeps the queue place of a new-session request whose client gave up, for that client's retry. */
  webDriverRetrySeconds: number;
  /**
   * How often a new WebDriver session waiting for its phone looks again when nothing wakes it sooner (a phone that is
   * ready wakes it at once): not an environment setting; a test makes it long to see that the wake-up works.
   */
  webDriverPollMs: number;
  /** Under this much free space on the data dir's disk (MB), a WebDriver run records no video: the disk is kept for the lab. */
  videoMinFreeMb: number;
}

/** Reads the engine configuration from the environment, with the documented defaults. */
export function loadConfig(env: NodeJS.ProcessEnv = process.env): EngineConfig {
  return {
    host: env.BENCHTOP_HOST || '127.0.0.1',
    port: intFrom(env.BENCHTOP_PORT, 7676, 'BENCHTOP_PORT'),
    tls: env.BENCHTOP_TLS_CERT && env.BENCHTOP_TLS_KEY ? { certFile: env.BENCHTOP_TLS_CERT, keyFile: env.BENCHTOP_TLS_KEY } : undefined,
    lanPort: intFrom(env.BENCHTOP_LAN_PORT, 7677, 'BENCHTOP_LAN_PORT'),
    dataDir: env.BENCHTOP_DATA_DIR || join(homedir(), '.benchtop'),
    ownerEmail: env.BENCHTOP_OWNER_EMAIL || 'owner@benchtop.local',
    ownerPassword: env.BENCHTOP_OWNER_PASSWORD || undefined,
    tokenTtlSeconds: intFrom(env.BENCHTOP_TOKEN_TTL_SECONDS, 12 * 3600, 'BENCHTOP_TOKEN_TTL_SECONDS'),
    invitationTtlDays: intFrom(env.BENCHTOP_INVITATION_TTL_DAYS, 7, 'BENCHTOP_INVITATION_TTL_DAYS'),
    deviceConcurrencyQuota: intFrom(env.BENCHTOP_DEVICE_QUOTA, 5, 'BENCHTOP_DEVICE_QUOTA'),
    adb:
      env.BENCHTOP_ADB === 'off'
        ? null
        : { host: env.BENCHTOP_ADB_HOST || '127.0.0.1', port: intFrom(env.BENCHTOP_ADB_PORT, 5037, 'BENCHTOP_ADB_PORT') },
    usbmuxd: env.BENCHTOP_USBMUXD_ADDRESS === 'off' ? null : parseUsbmuxdAddress(env.BENCHTOP_USBMUXD_ADDRESS || DEFAULT_USBMUXD_SOCKET),
    demoIphones: intFrom(env.BENCHTOP_DEMO_IPHONES, 0, 'BENCHTOP_DEMO_IPHONES'),
    wdaBundleId: env.BENCHTOP_WDA_BUNDLE_ID || DEFAULT_WDA_BUNDLE_ID,
    xcrun: findXcrun(env),
    goIos: findGoIos(env),
    ddiPath: env.BENCHTOP_DDI_PATH || null,
    deviceGraceSeconds: intFrom(env.BENCHTOP_DEVICE_GRACE_SECONDS, 60, 'BENCHTOP_DEVICE_GRACE_SECONDS'),
    demoPhones: intFrom(env.BENCHTOP_DEMO_PHONES, 0, 'BENCHTOP_DEMO_PHONES'),
    screenMaxFps: intFrom(env.BENCHTOP_SCREEN_MAX_FPS, 30, 'BENCHTOP_SCREEN_MAX_FPS'),
    instanceConcurrencyQuota: intFrom(env.BENCHTOP_INSTANCE_QUOTA, 2, 'BENCHTOP_INSTANCE_QUOTA'),
    hostCheckIntervalSeconds: intFrom(env.BENCHTOP_HOST_CHECK_SECONDS, 30, 'BENCHTOP_HOST_CHECK_SECONDS'),
    hostGraceSeconds: intFrom(env.BENCHTOP_HOST_GRACE_SECONDS, 120, 'BENCHTOP_HOST_GRACE_SECONDS'),
    terminalIdleSeconds: intFrom(env.BENCHTOP_TERMINAL_IDLE_SECONDS, 60, 'BENCHTOP_TERMINAL_IDLE_SECONDS'),
    // Traces and videos of long runs reach hundreds of MB; uploads stream to disk, so the bound is disk, not memory.
    maxAssetBytes: intFrom(env.BENCHTOP_MAX_ASSET_BYTES, 2 * 1024 ** 3, 'BENCHTOP_MAX_ASSET_BYTES'),
    uploadIdleSeconds: intFrom(env.BENCHTOP_UPLOAD_IDLE_SECONDS, 30, 'BENCHTOP_UPLOAD_IDLE_SECONDS'),
    uploadsPerCaller: intFrom(env.BENCHTOP_UPLOADS_PER_CALLER, 4, 'BENCHTOP_UPLOADS_PER_CALLER'),
    fileExpiryDays: intFrom(env.BENCHTOP_FILE_EXPIRY_DAYS, 30, 'BENCHTOP_FILE_EXPIRY_DAYS'),
    // Kept unless the lab owner chooses a period: removing a team's runs is the owner's decision, not an upgrade's.
    testResultFilesDays: intFrom(env.BENCHTOP_TEST_RESULT_FILES_DAYS, 0, 'BENCHTOP_TEST_RESULT_FILES_DAYS'),
    plans: DEFAULT_PLANS,
    deviceIdleSeconds: intFrom(env.BENCHTOP_DEVICE_IDLE_SECONDS, 900, 'BENCHTOP_DEVICE_IDLE_SECONDS'),
    deviceIdleMinSeconds: intFrom(env.BENCHTOP_DEVICE_IDLE_MIN_SECONDS, 10, 'BENCHTOP_DEVICE_IDLE_MIN_SECONDS'),
    idleWarningSeconds: intFrom(env.BENCHTOP_IDLE_WARNING_SECONDS, 60, 'BENCHTOP_IDLE_WARNING_SECONDS'),
    reservationWarningSeconds: intFrom(env.BENCHTOP_RESERVATION_WARNING_SECONDS, 300, 'BENCHTOP_RESERVATION_WARNING_SECONDS'),
    reservationMaxHours: intFrom(env.BENCHTOP_RESERVATION_MAX_HOURS, 8, 'BENCHTOP_RESERVATION_MAX_HOURS'),
    sharingCheckSeconds: intFrom(env.BENCHTOP_SHARING_CHECK_SECONDS, 1, 'BENCHTOP_SHARING_CHECK_SECONDS'),
    activityFlushSeconds: intFrom(env.BENCHTOP_ACTIVITY_FLUSH_SECONDS, 5, 'BENCHTOP_ACTIVITY_FLUSH_SECONDS'),
    assistantToolTimeoutSeconds: intFrom(env.BENCHTOP_ASSISTANT_TOOL_TIMEOUT_SECONDS, 30, 'BENCHTOP_ASSISTANT_TOOL_TIMEOUT_SECONDS'),
    logLevel: (env.BENCHTOP_LOG_LEVEL as EngineConfig['logLevel']) || 'warn',
    throttleLogins: env.BENCHTOP_LOGIN_THROTTLE !== 'off',
    remotePorts: portRange(env.BENCHTOP_REMOTE_PORTS || '20500-20599', 'BENCHTOP_REMOTE_PORTS'),
    remotePortRestSeconds: intFrom(env.BENCHTOP_REMOTE_PORT_REST_SECONDS, 90, 'BENCHTOP_REMOTE_PORT_REST_SECONDS'),
    remoteAuthTimeoutSeconds: intFrom(env.BENCHTOP_REMOTE_AUTH_TIMEOUT_SECONDS, 10, 'BENCHTOP_REMOTE_AUTH_TIMEOUT_SECONDS'),
    webDriverRetrySeconds: intFrom(env.BENCHTOP_WEBDRIVER_RETRY_SECONDS, 30, 'BENCHTOP_WEBDRIVER_RETRY_SECONDS'),
    webDriverPollMs: 50,
    videoMinFreeMb: intFrom(env.BENCHTOP_VIDEO_MIN_FREE_MB, 1024, 'BENCHTOP_VIDEO_MIN_FREE_MB'),
    providerCheckMs: intFrom(env.BENCHTOP_PROVIDER_CHECK_MS, 2000, 'BENCHTOP_PROVIDER_CHECK_MS'),
    providerProbeTimeoutMs: intFrom(env.BENCHTOP_PROVIDER_TIMEOUT_MS, 3000, 'BENCHTOP_PROVIDER_TIMEOUT_MS'),
    providerBackoffMaxMs: intFrom(env.BENCHTOP_PROVIDER_BACKOFF_MAX_MS, 30_000, 'BENCHTOP_PROVIDER_BACKOFF_MAX_MS'),
    backupIntervalSeconds: intFrom(env.BENCHTOP_BACKUP_INTERVAL_SECONDS, 3600, 'BENCHTOP_BACKUP_INTERVAL_SECONDS'),
    backupDir: env.BENCHTOP_BACKUP_DIR || null,
    backupKeep: intFrom(env.BENCHTOP_BACKUP_KEEP, 24, 'BENCHTOP_BACKUP_KEEP'),
    allowedHosts: (env.BENCHTOP_ALLOWED_HOSTS ?? '').split(',').map((h) => h.trim()).filter((h) => h !== ''),
  };
}

/** `first-last`, e.g. 20500-20599. */
function portRange(raw: string, name: string): { first: number; last: number } {
  const match = /^(\d{1,5})-(\d{1,5})$/.exec(raw.trim());
  const first = Number(match?.[1]);
  const last = Number(match?.[2]);
  if (!match || first < 1 || last > 65535 || first > last) throw new Error(`${name} must be a port range like 20500-20599, got "${raw}"`);
  return { first, last };
}

function intFrom(raw: string | undefined, fallback: number, name: string): number {
  if (raw === undefined || raw === '') return fallback;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < 0) throw new Error(`${name} must be a non-negative integer, got "${raw}"`);
  return n;
}

/** 127.0.0.0/8, ::1 and localhost: addresses no other machine can reach. */
export function isLoopback(host: string): boolean {
  return host === 'localhost' || host === '::1' || /^127(\.\d{1,3}){3}$/.test(host);
}
