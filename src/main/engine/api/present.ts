import type { Balance, Member, Invitation, Organization } from '../../../shared/api/organizations.js';
import type { ApiKey, User } from '../../../shared/api/account.js';
import type { Device, Instance, Session } from '../../../shared/api/sessions.js';
import type { Asset, TestResult, TestResultStatus } from '../../../shared/api/test-results.js';
import type { Period } from '../domain/metering.js';
import { iso, isoOrNull } from '../domain/time.js';
import type { FleetDevice } from '../../../shared/api/devices.js';
import type { FleetHost, MacHost } from '../../../shared/api/mac-hosts.js';
import type { ApiKeyRow } from '../store/api-keys.js';
import type { FleetDeviceRow } from '../store/fleet.js';
import type { DeviceAllocationRow } from '../store/devices.js';
import type { InstanceRow } from '../store/instances.js';
import type { InvitationRow } from '../store/invitations.js';
import type { MacHostRow } from '../store/mac-hosts.js';
import type { MemberView, OrganizationWithRole } from '../store/organizations.js';
import type { AssetRow, TestResultRow } from '../store/test-results.js';
import type { UserRow } from '../store/users.js';
import type { SessionWithParts } from '../services/sessions.js';
import type { HostHealth } from '../services/instances.js';

/** Rows to API shapes: the one place where stored names and millisecond times become the spec's JSON. */

export const presentUser = (u: UserRow, labOwnerId: string | undefined): User => ({
  id: u.id,
  email: u.email,
  name: u.name,
  labOwner: u.id === labOwnerId,
  createdAt: iso(u.createdAt),
});

export const presentOrganization = (o: OrganizationWithRole): Organization => ({
  id: o.id,
  name: o.name,
  personal: o.personalOf !== null,
  role: o.role,
  createdAt: iso(o.createdAt),
});

export const presentMember = (m: MemberView): Member => ({
  userId: m.userId,
  email: m.email,
  name: m.name,
  role: m.role,
  joinedAt: iso(m.createdAt),
});

export const presentInvitation = (i: InvitationRow): Invitation => ({
  id: i.id,
  organizationId: i.organizationId,
  organizationName: i.organizationName,
  email: i.email,
  role: i.role,
  status: i.status,
  invitedBy: i.invitedBy,
  createdAt: iso(i.createdAt),
  expiresAt: iso(i.expiresAt),
});

export const presentApiKey = (k: ApiKeyRow): ApiKey => ({
  id: k.id,
  name: k.name,
  apiKeySuffix: k.suffix,
  createdAt: iso(k.createdAt),
  lastUsedAt: isoOrNull(k.lastUsedAt),
});

export const presentDevice = (d: DeviceAllocationRow): Device => ({
  id: d.id,
  allocationId: d.id,
  status: d.status,
  info: {
    platform: d.platform,
    ...(d.type ? { type: d.type } : {}),
    name: d.name,
    osVersion: d.osVersion,
    // The serial is the handle device endpoints accept, so it shows only once the phone is ready to drive.
    ...(d.serial && d.status !== 'provisioning' && d.status !== 'queued' ? { serial: d.serial } : {}),
  },
  ...(d.releaseReason ? { releaseReason: d.releaseReason } : {}),
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
  devices: s.devices.map(presentDevice),
  instances: s.instances.map(presentInstance),
});

export const presentBalance = (b: {
  plan: string;
  period: Period;
  overageCapUsd: number;
  subscription: { status: 'active'; cancelAtPeriodEnd: boolean; currentPeriodEnd: number } | null;
  secondsRemaining: { devices: number; instances: number };
}): Balance => ({
  ...b,
  period: { start: iso(b.period.start), end: iso(b.period.end) },
  subscription: b.subscription && { ...b.subscription, currentPeriodEnd: iso(b.subscription.currentPeriodEnd) },
});

export const presentFleetDevice = (d: FleetDeviceRow, holder: { held: boolean; sessionId?: string; allocationId?: string }): FleetDevice => ({
  platform: d.platform,
  type: d.type,
  name: d.name,
  osVersion: d.osVersion,
  serial: d.serial,
  state: d.state,
  battery: d.battery,
  held: holder.held,
  ...(holder.sessionId ? { heldBy: { sessionId: holder.sessionId, allocationId: holder.allocationId! } } : {}),
  lastSeenAt: iso(d.lastSeenAt),
});

export const presentTestResult = (r: TestResultRow): TestResult => ({
  id: r.id,
  organizationId: r.organizationId,
  name: r.name,
  userAgent: r.userAgent,
  status: r.status as TestResultStatus,
  git: r.git,
  tags: r.tags,
  environment: r.environment,
  stats: r.stats,
  sessionId: r.sessionId,
  createdBy: r.createdBy,
  startedAt: isoOrNull(r.startedAt),
  finishedAt: isoOrNull(r.finishedAt),
  createdAt: iso(r.createdAt),
  updatedAt: iso(r.updatedAt),
});

export const presentAsset = (a: AssetRow): Asset => ({
  id: a.id,
  name: a.name,
  contentType: a.contentType,
  size: a.size,
  sha256: a.sha256,
  createdAt: iso(a.createdAt),
});

const presentHealth = (h: HostHealth) => ({
  health: h.state,
  ...(h.message ? { healthMessage: h.message } : {}),
  checkedAt: isoOrNull(h.checkedAt),
});

/** A host for the lab owner: never its secrets, only which kind of credential it has. */
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

/** A host for any signed-in caller: health and room; instances only of the caller's own organization. */
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

/** The list wrapper; nextCursor only when another page exists. */
export const list = <T>(data: T[], nextCursor?: string) => ({ object: 'list' as const, data, ...(nextCursor ? { nextCursor } : {}) });

/** A keyset page: its cursor is the last item's createdAt (epoch ms), given back as the next request's `before`. */
export const page = <T>(data: T[], nextCursor: number | undefined) => list(data, nextCursor === undefined ? undefined : iso(nextCursor));
