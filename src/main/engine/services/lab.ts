import { DEFAULT_USBMUXD_SOCKET, formatUsbmuxdAddress } from '../fleet/ios/usbmux.js';
import type { LabSettings, LabSettingsPatch } from '../../../shared/api/account.js';
import type { EngineConfig } from '../config.js';
import { forbidden } from '../domain/errors.js';
import type { UserRow } from '../store/users.js';
import { requireInteractive } from './auth.js';
import type { Caller, EngineContext } from './context.js';

export const OWNER_SETTING = 'owner_user_id';
const SIGNUP_OPEN = 'signup_open';
export const LAN_SHARING = 'lan_sharing';
const DEVICE_QUOTA = 'device_quota';
const INSTANCE_QUOTA = 'instance_quota';
const ADB_ADDRESS = 'adb_address';

/** What LAN sharing shows in the lab settings, and how it is switched; the HTTPS server itself lives in api/. */
export interface LanSharing {
  status(): { enabled: boolean; port: number; urls: string[]; certificateSha256: string | null };
  enable(): Promise<void>;
  disable(): Promise<void>;
}

type Settings = EngineContext['stores']['settings'];
type AdbAddress = { host: string; port: number };
/** loadConfig's default: what the settings show while the Android fleet is off and no address was saved. */
const DEFAULT_ADB: AdbAddress = { host: '127.0.0.1', port: 5037 };
const savedAdb = (settings: Settings): AdbAddress | undefined => {
  const saved = settings.get(ADB_ADDRESS);
  return saved ? (JSON.parse(saved) as AdbAddress) : undefined;
};

export const labOwnerId = (ctx: EngineContext) => ctx.stores.settings.get(OWNER_SETTING);
export const isSignupOpen = (ctx: EngineContext) => ctx.stores.settings.get(SIGNUP_OPEN) !== 'false';
export const isLanSharingOn = (settings: Settings) => settings.get(LAN_SHARING) === 'true';

/** The lab owner's quotas, else the configured defaults (BENCHTOP_DEVICE_QUOTA, BENCHTOP_INSTANCE_QUOTA). */
export function labQuotas(ctx: EngineContext): { devices: number; instances: number } {
  const stored = (key: string) => ctx.stores.settings.get(key);
  return {
    devices: Number(stored(DEVICE_QUOTA) ?? ctx.config.deviceConcurrencyQuota),
    instances: Number(stored(INSTANCE_QUOTA) ?? ctx.config.instanceConcurrencyQuota),
  };
}

/**
 * The adb server to track: the address the lab owner saved, else the configured one; null when BENCHTOP_ADB=off.
 * Read when the fleet starts; a change saved while it runs is applied at once as well (updateLabSettings).
 */
export function adbAddressOf(config: EngineConfig, settings: Settings): AdbAddress | null {
  return config.adb && (savedAdb(settings) ?? config.adb);
}

export function labSettings(ctx: EngineContext): LabSettings {
  const adb = savedAdb(ctx.stores.settings) ?? ctx.config.adb ?? DEFAULT_ADB;
  return {
    signupOpen: isSignupOpen(ctx),
    lanSharing: ctx.lanSharing.status(),
    secretStore: ctx.secrets.kind,
    adb: { enabled: ctx.config.adb !== null, host: adb.host, port: adb.port },
    usbmuxd: { enabled: ctx.config.usbmuxd !== null, address: formatUsbmuxdAddress(ctx.config.usbmuxd ?? { path: DEFAULT_USBMUXD_SOCKET }) },
    quotas: labQuotas(ctx),
  };
}

export async function updateLabSettings(ctx: EngineContext, patch: LabSettingsPatch): Promise<LabSettings> {
  const { settings } = ctx.stores;
  // LAN sharing first: it is the one change that can fail (its port taken), and then nothing else is changed.
  if (patch.lanSharing === true) await ctx.lanSharing.enable();
  if (patch.lanSharing === false) await ctx.lanSharing.disable();
  if (patch.lanSharing !== undefined) settings.set(LAN_SHARING, String(patch.lanSharing));
  if (patch.signupOpen !== undefined) settings.set(SIGNUP_OPEN, String(patch.signupOpen));
  if (patch.adb) {
    const address = { host: patch.adb.host, port: patch.adb.port };
    settings.set(ADB_ADDRESS, JSON.stringify(address));
    // Not awaited: an address that does not answer may take the OS's whole connect timeout, and the fleet keeps
    // retrying it anyway. The old server's phones are dropped before this returns; the new one's arrive as read.
    void ctx.retargetAdb?.(address);
  }
  if (patch.quotas?.devices !== undefined) settings.set(DEVICE_QUOTA, String(patch.quotas.devices));
  if (patch.quotas?.instances !== undefined) settings.set(INSTANCE_QUOTA, String(patch.quotas.instances));
  return labSettings(ctx);
}

/** The tray's line: the lab at a glance, with the window closed. */
export interface LabSummary {
  phones: { free: number; inUse: number };
  instances: { running: number };
}

/** Phones online (free, or held by any organization, cleanup included) and instances provisioning or ready. */
export function labSummary(ctx: EngineContext): LabSummary {
  const online = ctx.stores.fleet.all().filter((phone) => phone.state === 'device');
  const inUse = online.filter((phone) => ctx.devices.holder(phone.serial, '').held).length;
  return {
    phones: { free: online.length - inUse, inUse },
    instances: { running: ctx.stores.instances.activeTotal() },
  };
}

const plural = (n: number, one: string, many: string) => `${n} ${n === 1 ? one : many}`;

export function describeLabSummary(summary: LabSummary): string {
  return `${plural(summary.phones.free, 'phone', 'phones')} free, ${summary.phones.inUse} in use; ` +
    `${plural(summary.instances.running, 'instance', 'instances')} running`;
}

export function isLabOwner(ctx: EngineContext, user: UserRow): boolean {
  return labOwnerId(ctx) === user.id;
}

/** Lab administration is for the lab owner (the first account), signed in interactively. */
export function requireLabOwner(ctx: EngineContext, caller: Caller): void {
  requireInteractive(caller);
  if (!isLabOwner(ctx, caller.user)) throw forbidden('not_lab_owner', 'Only the lab owner can change lab settings.');
}
