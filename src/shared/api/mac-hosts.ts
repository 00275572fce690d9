import { Type, type Static } from 'typebox';
import { DateTime, Nullable, Uuid } from './common.js';

const HostMode = Type.Union([Type.Literal('tart'), Type.Literal('bare')], {
  description: 'tart: each instance is a Tart VM cloned from baseImage; bare: the Mac itself is the instance, one at a time.',
});
export const HostHealth = Type.Union([Type.Literal('unknown'), Type.Literal('up'), Type.Literal('down')]);
export const Name = Type.String({ minLength: 1, maxLength: 100, pattern: '^\\S(.*\\S)?$' });
export const Address = Type.String({ minLength: 1, maxLength: 255, pattern: '^[A-Za-z0-9._:%-]+$', description: 'Host name or IP address on the LAN.' });
export const Port = Type.Integer({ minimum: 1, maximum: 65535 });
export const Username = Type.String({ minLength: 1, maxLength: 100, pattern: '^[A-Za-z0-9._][A-Za-z0-9._-]*$' });
export const Secret = (description: string) => Type.String({ minLength: 1, maxLength: 16_384, description: `${description} Write-only: never returned.` });
const BaseImage = Type.String({ minLength: 1, maxLength: 300, pattern: '^\\S(.*\\S)?$', description: 'tart: the image instances are cloned from, e.g. ghcr.io/cirruslabs/macos-sequoia-base:latest; bare: a description of the host\'s system. Shown as each instance\'s image.' });
const WorkDir = Type.String({ minLength: 1, maxLength: 200, pattern: '^/?[A-Za-z0-9._-]+(/[A-Za-z0-9._-]+)*$', description: 'bare mode: the directory an instance works in, cleared on release; relative to the home directory unless absolute.' });

const hostFields = {
  name: Name,
  address: Address,
  port: Type.Optional(Port),
  username: Username,
  privateKey: Type.Optional(Secret('An OpenSSH or PEM private key.')),
  passphrase: Type.Optional(Secret('The private key\'s passphrase.')),
  password: Type.Optional(Secret('The password, when no private key is given.')),
  mode: HostMode,
  baseImage: BaseImage,
  maxInstances: Type.Optional(Type.Integer({ minimum: 1, maximum: 16, description: 'Default 2 (Apple allows two macOS VMs per Mac); always 1 on a bare host.' })),
  cpuCores: Type.Optional(Type.Integer({ minimum: 1, maximum: 256, description: 'Per instance; default 4.' })),
  memoryMb: Type.Optional(Type.Integer({ minimum: 1024, maximum: 4_194_304, description: 'Per instance; default 8192.' })),
  diskMb: Type.Optional(Type.Integer({ minimum: 1024, maximum: 67_108_864, description: 'Per instance; default 51200. Tart sizes disks in whole GB.' })),
  vmUsername: Type.Optional(Username),
  vmPort: Type.Optional(Port),
  vmPassword: Type.Optional(Secret('The VM\'s password; Tart\'s images use admin/admin, the default.')),
  vmPrivateKey: Type.Optional(Secret('A private key the VM accepts, instead of a password.')),
  workDir: Type.Optional(WorkDir),
  hostKeySha256: Type.Optional(
    Nullable(Type.String({ pattern: '^SHA256:[A-Za-z0-9+/]{43}$', description: 'The host key fingerprint to expect (as ssh-keygen -lf prints it); null trusts the next key the host presents. Without it, the first key seen is pinned.' })),
  ),
};

export const CreateMacHostBody = Type.Object(hostFields, { additionalProperties: false });
export type CreateMacHostBody = Static<typeof CreateMacHostBody>;

export const UpdateMacHostBody = Type.Partial(Type.Object(hostFields), { additionalProperties: false });
export type UpdateMacHostBody = Static<typeof UpdateMacHostBody>;

export const HostIdParams = Type.Object({ hostId: Uuid });

const Health = {
  health: HostHealth,
  healthMessage: Type.Optional(Type.String({ description: 'Why the last check failed.' })),
  checkedAt: Nullable(DateTime),
};

/** A host as the lab owner sees it: everything but its secrets. */
export const MacHost = Type.Object({
  id: Uuid,
  name: Type.String(),
  address: Type.String(),
  port: Type.Integer(),
  username: Type.String(),
  auth: Type.Union([Type.Literal('privateKey'), Type.Literal('password')], { description: 'Which kind of credential is stored.' }),
  mode: HostMode,
  baseImage: Type.String(),
  maxInstances: Type.Integer(),
  cpuCores: Type.Integer(),
  memoryMb: Type.Integer(),
  diskMb: Type.Integer(),
  vmUsername: Type.String(),
  vmPort: Type.Integer(),
  vmAuth: Type.Union([Type.Literal('default'), Type.Literal('privateKey'), Type.Literal('password')]),
  workDir: Type.String(),
  hostKeySha256: Nullable(Type.String({ description: 'The host key fingerprint pinned on the first connection.' })),
  ...Health,
  createdAt: DateTime,
  updatedAt: DateTime,
});
export type MacHost = Static<typeof MacHost>;

/** A host as every signed-in caller sees it: health and room, nothing about how to reach it. */
export const FleetHost = Type.Object({
  id: Uuid,
  name: Type.String(),
  mode: HostMode,
  image: Type.String(),
  machine: Type.Object({ arch: Type.String(), cpuCores: Type.Integer(), memoryMb: Type.Integer(), diskMb: Type.Integer() }),
  ...Health,
  maxInstances: Type.Integer(),
  freeSlots: Type.Integer({ description: 'Instances it can take now: 0 while it is down.' }),
  instances: Type.Array(
    Type.Object({ sessionId: Uuid, instanceId: Uuid }),
    { description: 'The caller\'s own organization\'s instances on it; other organizations\' are counted in freeSlots only.' },
  ),
});
export type FleetHost = Static<typeof FleetHost>;
