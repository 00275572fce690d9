import type { FleetProvider, Provider } from '../../../../shared/api/providers.js';
import { iso, isoOrNull } from '../../domain/time.js';
import type { ProviderView } from '../../services/providers.js';

export const presentProvider = ({ provider: p, health, phones, duplicateSerials }: ProviderView): Provider => ({
  id: p.id,
  name: p.name,
  address: p.address,
  port: p.port,
  username: p.username,
  auth: p.auth,
  hostKeySha256: p.hostKeySha256,
  adbPort: p.adbPort,
  usbmuxdSocket: p.usbmuxdSocket,
  paused: p.paused,
  health: health.state,
  ...(health.message ? { healthMessage: health.message } : {}),
  checkedAt: isoOrNull(health.checkedAt),
  roundTripMs: health.rttMs === null ? null : Math.round(health.rttMs * 100) / 100,
  adbVersion: health.adbVersion,
  os: health.os,
  devicectl: health.devicectl,
  phones,
  duplicateSerials,
  createdAt: iso(p.createdAt),
  updatedAt: iso(p.updatedAt),
});

export const presentFleetProvider = ({ provider: p, health, phones }: ProviderView): FleetProvider => ({
  name: p.name,
  health: health.state,
  ...(health.message ? { healthMessage: health.message } : {}),
  checkedAt: isoOrNull(health.checkedAt),
  phones,
  paused: p.paused,
});
