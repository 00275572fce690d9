import type { LabSettings, LabSettingsPatch, WebDriverVideo } from '../../../shared/api/account.js';
import type { EngineConfig } from '../config.js';
import { DEFAULT_USBMUXD_SOCKET, formatUsbmuxdAddress } from '../fleet/ios/usbmux.js';
import type { Stores } from '../store/index.js';
import type { SecretStore } from '../secrets.js';
import { conflict, invalid, ServiceError } from '../domain/errors.js';
import { diskFreeBytes } from './disk.js';

const SIGNUP_OPEN = 'signup_open';
export const LAN_SHARING = 'lan_sharing';
const DEVICE_QUOTA = 'device_quota';
const INSTANCE_QUOTA = 'instance_quota';
const ADB_ADDRESS = 'adb_address';
const DEVICE_IDLE_SECONDS = 'device_idle_seconds';
const RESERVATION_MAX_HOURS = 'reservation_max_hours';
const REMOTE_CONNECT_ON_LAN = 'remote_connect_on_lan';
const TEST_RESULT_FILES_DAYS = 'test_result_files_days';
const WEBDRIVER_VIDEO = 'webdriver_video';

/** What LAN sharing shows in the lab settings, and how it is switched; the HTTPS server itself lives in api/. */
export interface LanSharing {
  status(): { enabled: boolean; port: number; urls: string[]; certificateSha256: string | null };
  enable(): Promise<void>;
  disable(): Promise<void>;
  /** The machine's LAN address teammates reach (the first of the URLs LAN sharing shows); null when it has none. */
  lanAddress(): string | null;
  /** The self-signed certificate LAN sharing serves, as PEM; null until LAN sharing was first switched on. */
  certificatePem(): string | null;
}

type Settings = Stores['settings'];
type AdbAddress = { host: string; port: number };
/** loadConfig's default: what the settings show while the Android fleet is off and no address was saved. */
const DEFAULT_ADB: AdbAddress = { host: '127.0.0.1', port: 5037 };
const savedAdb = (settings: Settings): AdbAddress | undefined => {
  const saved = settings.get(ADB_ADDRESS);
  return saved ? (JSON.parse(saved) as AdbAddress) : undefined;
};

export const isLanSharingOn = (settings: Settings) => settings.get(LAN_SHARING) === 'true';
/** The lab owner let remote-connect listen on the LAN in plain TCP (off unless switched on). */
export const isRemoteConnectOnLan = (settings: Settings) => settings.get(REMOTE_CONNECT_ON_LAN) === 'true';

/**
 * The adb server to track: the address the lab owner saved, else the configured one; null when BENCHTOP_ADB=off.
 * Read when the fleet starts; a change saved while it runs is applied at once as well (updateLabSettings).
 */
export function adbAddressOf(config: EngineConfig, settings: Settings): AdbAddress | null {
  return config.adb && (savedAdb(settings) ?? config.adb);
}

/**
 * The lab owner's settings: sign-up, LAN sharing, the adb server, the usbmuxd (read-only), quotas, plain remote-connect
 * on the LAN, how long test results' files are kept, and the video of WebDriver runs that do not say.
 */
export class LabSettingsService {
  constructor(
    private readonly stores: Pick<Stores, 'settings' | 'testResults'>,
    private readonly config: Pick<
      EngineConfig,
      | 'adb' | 'usbmuxd' | 'goIos' | 'ddiPath' | 'deviceConcurrencyQuota' | 'instanceConcurrencyQuota' | 'deviceIdleSeconds' | 'deviceIdleMinSeconds'
      | 'reservationMaxHours' | 'dataDir' | 'testResultFilesDays'
    >,
    private readonly lanSharing: LanSharing,
    private readonly secrets: Pick<SecretStore, 'kind'>,
    /** Points the Android fleet at another adb server at once; absent when the Android fleet is off (BENCHTOP_ADB=off). */
    private readonly retargetAdb?: (address: AdbAddress) => Promise<void>,
    /** Remote connections listening on the address this switch no longer names are closed (RemoteConnect.rehost). */
    private readonly remoteConnectMoved?: () => void,
    /** A shorter retention applies at once: the files past it are removed now, not at the next hourly sweep. */
    private readonly testResultFilesKeepChanged?: () => void,
  ) {}

  isSignupOpen(): boolean {
    return this.stores.settings.get(SIGNUP_OPEN) !== 'false';
  }

  /** The lab owner's quotas, else the configured defaults (BENCHTOP_DEVICE_QUOTA, BENCHTOP_INSTANCE_QUOTA). */
  quotas(): { devices: number; instances: number } {
    const stored = (key: string) => this.stores.settings.get(key);
    return {
      devices: Number(stored(DEVICE_QUOTA) ?? this.config.deviceConcurrencyQuota),
      instances: Number(stored(INSTANCE_QUOTA) ?? this.config.instanceConcurrencyQuota),
    };
  }

  /** How long an allocation may stay idle before it is released, in seconds; 0: never. */
  deviceIdleSeconds(): number {
    return Number(this.stores.settings.get(DEVICE_IDLE_SECONDS) ?? this.config.deviceIdleSeconds);
  }

  /** The longest window a reservation may book, in hours. */
  reservationMaxHours(): number {
    return Number(this.stores.settings.get(RESERVATION_MAX_HOURS) ?? this.config.reservationMaxHours);
  }

  /** How many days a test result's files are kept after they were stored; 0: kept. */
  testResultFilesDays(): number {
    return Number(this.stores.settings.get(TEST_RESULT_FILES_DAYS) ?? this.config.testResultFilesDays);
  }

  /** The video of a WebDriver run that does not say: a video unless the lab owner chose otherwise. */
  webDriverVideo(): WebDriverVideo {
    return (this.stores.settings.get(WEBDRIVER_VIDEO) as WebDriverVideo | undefined) ?? 'on';
  }

  /** Public: any TLS handshake with the LAN port shows it anyway, and a teammate's client needs it to trust that port. */
  certificatePem(): string {
    const pem = this.lanSharing.certificatePem();
    if (!pem) throw new ServiceError('not_found', 'certificate_not_found', 'This lab has no LAN certificate: it is made the first time the lab owner switches LAN sharing on.');
    return pem;
  }

  get(): LabSettings {
    const adb = savedAdb(this.stores.settings) ?? this.config.adb ?? DEFAULT_ADB;
    return {
      signupOpen: this.isSignupOpen(),
      lanSharing: this.lanSharing.status(),
      secretStore: this.secrets.kind,
      adb: { enabled: this.config.adb !== null, host: adb.host, port: adb.port },
      usbmuxd: { enabled: this.config.usbmuxd !== null, address: formatUsbmuxdAddress(this.config.usbmuxd ?? { path: DEFAULT_USBMUXD_SOCKET }) },
      iosTunnel: { enabled: this.config.usbmuxd !== null && this.config.goIos !== null, goIos: this.config.goIos, developerDiskImage: this.config.ddiPath },
      quotas: this.quotas(),
      deviceIdleSeconds: this.deviceIdleSeconds(),
      deviceIdleMinSeconds: this.config.deviceIdleMinSeconds,
      reservationMaxHours: this.reservationMaxHours(),
      remoteConnectOnLan: { enabled: isRemoteConnectOnLan(this.stores.settings), host: this.lanSharing.lanAddress() },
      testResultFiles: { keepDays: this.testResultFilesDays(), storedBytes: this.stores.testResults.storedBytes(), diskFreeBytes: diskFreeBytes(this.config.dataDir) },
      webDriverVideo: this.webDriverVideo(),
    };
  }

  async update(patch: LabSettingsPatch): Promise<LabSettings> {
    const { settings } = this.stores;
    const idle = patch.deviceIdleSeconds;
    const least = this.config.deviceIdleMinSeconds;
    // Checked before anything changes, so that a refused patch changes nothing.
    if (idle !== undefined && idle !== 0 && idle < least) {
      throw invalid('idle_too_short', `deviceIdleSeconds is 0 (never) or at least ${least}, not ${idle}.`);
    }
    if (patch.remoteConnectOnLan === true && !this.lanSharing.lanAddress()) {
      throw conflict('no_lan_address', 'This machine has no LAN IPv4 address for remote connections to listen on.');
    }
    // LAN sharing first: it is the one change that can fail (its port taken), and then nothing else is changed.
    if (patch.lanSharing === true) await this.lanSharing.enable();
    if (patch.lanSharing === false) await this.lanSharing.disable();
    if (patch.lanSharing !== undefined) settings.set(LAN_SHARING, String(patch.lanSharing));
    if (patch.signupOpen !== undefined) settings.set(SIGNUP_OPEN, String(patch.signupOpen));
    if (patch.adb) {
      const address = { host: patch.adb.host, port: patch.adb.port };
      settings.set(ADB_ADDRESS, JSON.stringify(address));
      // Not awaited: an address that does not answer may take the OS's whole connect timeout, and the fleet keeps
      // retrying it anyway. The old server's phones are dropped before this returns; the new one's arrive as read.
      void this.retargetAdb?.(address);
    }
    if (patch.quotas?.devices !== undefined) settings.set(DEVICE_QUOTA, String(patch.quotas.devices));
    if (patch.quotas?.instances !== undefined) settings.set(INSTANCE_QUOTA, String(patch.quotas.instances));
    if (idle !== undefined) settings.set(DEVICE_IDLE_SECONDS, String(idle));
    if (patch.reservationMaxHours !== undefined) settings.set(RESERVATION_MAX_HOURS, String(patch.reservationMaxHours));
    if (patch.remoteConnectOnLan !== undefined && patch.remoteConnectOnLan !== isRemoteConnectOnLan(settings)) {
      settings.set(REMOTE_CONNECT_ON_LAN, String(patch.remoteConnectOnLan));
      this.remoteConnectMoved?.();
    }
    if (patch.webDriverVideo !== undefined) settings.set(WEBDRIVER_VIDEO, patch.webDriverVideo);
    const keepDays = patch.testResultFiles?.keepDays;
    if (keepDays !== undefined && keepDays !== this.testResultFilesDays()) {
      settings.set(TEST_RESULT_FILES_DAYS, String(keepDays));
      if (keepDays > 0) this.testResultFilesKeepChanged?.();
    }
    return this.get();
  }
}
