import type { Device, Instance, Session } from '../../../../shared/api/sessions.js';
import { iso, isoOrNull } from '../../domain/time.js';
import type { DeviceAllocationRow } from '../../store/devices.js';
import type { InstanceRow } from '../../store/instances.js';
import type { SessionWithParts } from '../../services/sessions.js';

/** An allocation's status in the Mobile Next fleet's words: what mobilecli and /ws clients wait on. */
export function fleetState(status: DeviceAllocationRow['status']): 'allocating' | 'online' | 'offline' | 'released' {
  switch (status) {
    case 'queued':
    case 'provisioning':
      return 'allocating';
    case 'in_use':
      return 'online';
    case 'offline':
      return 'offline';
    default:
      return 'released';
  }
}

/** Sessions and what they hold (devices, instances) as the spec's JSON: stored names and millisecond times become its names and RFC 3339. */

export const presentDevice = (d: DeviceAllocationRow): Device => ({
  id: d.id,
  allocationId: d.id,
  status: d.status,
  state: fleetState(d.status),
  info: {
    platform: d.platform,
    ...(d.type ? { type: d.type } : {}),
    name: d.name,
    osVersion: d.osVersion,
    // The serial is the handle device endpoints accept, so it shows only once the phone is ready to drive.
    ...(d.serial && d.status !== 'provisioning' && d.status !== 'queued' ? { serial: d.serial } : {}),
  },
  ...(d.releaseReason ? { releaseReason: d.releaseReason } : {}),
  ...(d.releasedAt !== null ? { releasedBy: d.releasedBy } : {}),
  // When the phone goes back to the pool unless someone uses it: for a phone in use, while idle release is on.
  ...(d.status === 'in_use' ? { idleReleaseAt: isoOrNull(d.idleDeadlineAt) } : {}),
  ...(d.warningReason && d.warningReleaseAt !== null && d.releasedAt === null
    ? { releaseWarning: { reason: d.warningReason, releaseAt: iso(d.warningReleaseAt) } }
    : {}),
  createdAt: iso(d.createdAt),
  releasedAt: isoOrNull(d.releasedAt),
});

export const presentInstance = (i: InstanceRow): Instance => ({
  id: i.id,
  status: i.status,
  os: i.os,
  image: i.image,
  machine: { arch: i.arch, cpuCores: i.cpuCores, memoryMb: i.memoryMb, diskMb: i.diskMb },
  createdAt: iso(i.createdAt),
  readyAt: isoOrNull(i.readyAt),
  releasedAt: isoOrNull(i.releasedAt),
  ...(i.statusMessage ? { statusMessage: i.statusMessage } : {}),
});

export const presentSession = (s: SessionWithParts): Session => ({
  id: s.id,
  organizationId: s.organizationId,
  createdBy: s.createdBy,
  createdAt: iso(s.createdAt),
  name: s.name,
  endedAt: isoOrNull(s.endedAt),
  devices: s.devices.map(presentDevice),
  instances: s.instances.map(presentInstance),
});
