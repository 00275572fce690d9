import type { FleetDevice } from '../../../../shared/api/devices.js';
import type { FleetHost, MacHost } from '../../../../shared/api/mac-hosts.js';
import { iso, isoOrNull } from '../../domain/time.js';
import type { FleetDeviceRow } from '../../store/fleet.js';
import type { MacHostRow } from '../../store/mac-hosts.js';
import type { DeviceAllocator } from '../../services/devices.js';
import type { HostHealth } from '../../services/instances.js';

/** The lab's inventory: phones and Mac hosts, free or held; who holds them only for the caller's own organization. */

export const presentFleetDevice = (
  d: FleetDeviceRow & { model?: string; steps?: string; wdaLaunch?: FleetDevice['wdaLaunch'] },
  holder: ReturnType<DeviceAllocator['holder']>,
  booking?: { startsAt: number; endsAt: number; own: boolean },
  viaWebDriver = false,
): FleetDevice => ({
  platform: d.platform,
  type: d.type,
  name: d.name,
  osVersion: d.osVersion,
  serial: d.serial,
  state: d.state,
  battery: d.battery,
  host: d.host,
  ...(d.model ? { model: d.model } : {}),
  ...(d.steps ? { steps: d.steps } : {}),
  ...(d.note ? { note: d.note } : {}),
  ...(d.platform === 'ios' && d.wdaLaunch ? { wdaLaunch: d.wdaLaunch } : {}),
  held: holder.held,
  ...(holder.sessionId
    ? {
        heldBy: {
          sessionId: holder.sessionId,
          allocationId: holder.allocationId!,
          ...(holder.memberEmail ? { memberEmail: holder.memberEmail } : {}),
          ...(viaWebDriver ? { webdriver: true } : {}),
          ...(holder.idleReleaseAt !== undefined ? { idleReleaseAt: isoOrNull(holder.idleReleaseAt) } : {}),
          ...(holder.warning ? { releaseWarning: { reason: holder.warning.reason, releaseAt: iso(holder.warning.releaseAt) } } : {}),
        },
      }
    : {}),
  ...(booking ? { booking: { startsAt: iso(booking.startsAt), endsAt: iso(booking.endsAt), own: booking.own } } : {}),
  lastSeenAt: iso(d.lastSeenAt),
});

const presentHealth = (h: HostHealth) => ({
  health: h.state,
  ...(h.message ? { healthMessage: h.message } : {}),
  checkedAt: isoOrNull(h.checkedAt),
});

export const presentMacHost = (h: MacHostRow, health: HostHealth): MacHost => ({
  id: h.id,
  name: h.name,
  address: h.address,
  port: h.port,
  username: h.username,
  auth: h.auth,
  mode: h.mode,
  baseImage: h.baseImage,
  maxInstances: h.maxInstances,
  cpuCores: h.cpuCores,
  memoryMb: h.memoryMb,
  diskMb: h.diskMb,
  vmUsername: h.vmUsername,
  vmPort: h.vmPort,
  vmAuth: h.vmAuth,
  workDir: h.workDir,
  hostKeySha256: h.hostKeySha256,
  ...presentHealth(health),
  createdAt: iso(h.createdAt),
  updatedAt: iso(h.updatedAt),
});

export const presentFleetHost = (
  h: MacHostRow,
  health: HostHealth,
  freeSlots: number,
  own: Array<{ sessionId: string; instanceId: string }>,
  arch: string,
): FleetHost => ({
  id: h.id,
  name: h.name,
  mode: h.mode,
  image: h.baseImage,
  machine: { arch, cpuCores: h.cpuCores, memoryMb: h.memoryMb, diskMb: h.diskMb },
  ...presentHealth(health),
  maxInstances: h.mode === 'bare' ? 1 : h.maxInstances,
  freeSlots,
  instances: own,
});
