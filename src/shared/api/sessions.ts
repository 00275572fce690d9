import { Type, type Static } from 'typebox';
import { DateTime, Nullable, Uuid } from './common.js';

export const Device = Type.Object({
  id: Uuid,
  allocationId: Uuid,
  status: Type.String({ description: 'provisioning, queued, in_use, offline, released; clients must tolerate new values.' }),
  state: Type.String({ description: 'The status in the Mobile Next fleet\'s words, which mobilecli waits on: allocating (queued or provisioning), online (in_use), offline, released.' }),
  info: Type.Object({
    platform: Type.String(),
    type: Type.Optional(Type.String()),
    name: Type.String(),
    osVersion: Type.String(),
    serial: Type.Optional(Type.String()),
  }),
  releaseReason: Type.Optional(Type.String({ description: 'Why the lab released it: idle_timeout, reserved, device_lost, install_failed, provisioning_failed, member_removed (its holder left the organization); absent when a caller released it.' })),
  releasedBy: Type.Optional(Nullable(Type.String({ format: 'uuid', description: 'Present once released: the id of the member who released it (through the API, /ws, MCP, WebDriver or the GUI, or by ending its session); null when the lab released it, for releaseReason.' }))),
  idleReleaseAt: Type.Optional(Nullable(DateTime)),
  releaseWarning: Type.Optional(
    Type.Object(
      {
        reason: Type.String({ description: 'idle_timeout or reserved' }),
        releaseAt: DateTime,
      },
      { description: 'The lab will release this device at releaseAt: it has been idle (keep it to start over), or another organization reserved it from then.' },
    ),
  ),
  createdAt: DateTime,
  releasedAt: Nullable(DateTime),
});
export type Device = Static<typeof Device>;

export const Instance = Type.Object({
  id: Uuid,
  status: Type.String({ description: 'provisioning, ready, released or failed.' }),
  os: Type.String(),
  image: Type.String(),
  machine: Type.Object({
    arch: Type.String(),
    cpuCores: Type.Integer(),
    memoryMb: Type.Integer(),
    diskMb: Type.Integer(),
  }),
  createdAt: DateTime,
  readyAt: Nullable(DateTime),
  releasedAt: Nullable(DateTime),
  statusMessage: Type.Optional(Type.String({ description: 'Present when failed: which provisioning step failed, and why.' })),
});
export type Instance = Static<typeof Instance>;

export const Session = Type.Object({
  id: Uuid,
  organizationId: Uuid,
  createdBy: Nullable(Uuid),
  createdAt: DateTime,
  name: Type.Optional(Nullable(Type.String({ description: 'Extension: what the people using it call it; null when unnamed.' }))),
  endedAt: Type.Optional(Nullable(DateTime)),
  devices: Type.Array(Device),
  instances: Type.Array(Instance),
});
export type Session = Static<typeof Session>;

export const SessionListQuery = Type.Object(
  {
    limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 500, default: 100 })),
    before: Type.Optional(DateTime),
    days: Type.Optional(Type.Integer({ minimum: 1, maximum: 90 })),
  },
);
export type SessionListQuery = Static<typeof SessionListQuery>;

/** Extension: PATCH /sessions/{sessionId}. An empty name clears it. */
export const UpdateSessionBody = Type.Object(
  { name: Type.Union([Type.String({ maxLength: 100 }), Type.Null()]) },
  { additionalProperties: false },
);
export type UpdateSessionBody = Static<typeof UpdateSessionBody>;
