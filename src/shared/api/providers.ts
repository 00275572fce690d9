import { Type, type Static } from 'typebox';
import { DateTime, Nullable, Uuid } from './common.js';
import { Address, HostHealth, Name, Port, Secret, Username } from './mac-hosts.js';

const UnixPath = Type.String({ minLength: 1, maxLength: 200, pattern: '^/[A-Za-z0-9._/-]+$' });

const providerFields = {
  name: Name,
  address: Address,
  port: Type.Optional(Port),
  username: Username,
  privateKey: Type.Optional(Secret('An OpenSSH or PEM private key of the provider\'s dedicated account.')),
  passphrase: Type.Optional(Secret('The private key\'s passphrase.')),
  password: Type.Optional(Secret('The password, when no private key is given.')),
  hostKeySha256: Type.Optional(
    Nullable(Type.String({ pattern: '^SHA256:[A-Za-z0-9+/]{43}$', description: 'The host key fingerprint to expect (as ssh-keygen -lf prints it, or as POST /lab/providers/host-key reads it): an add whose sshd presents another is refused (409 host_key_mismatch). Without it, the first key seen is pinned.' })),
  ),
  adbPort: Type.Optional(Type.Integer({ minimum: 1, maximum: 65535, description: 'The port of the adb server on the provider\'s own loopback; default 5037.' })),
  usbmuxdSocket: Type.Optional(UnixPath),
};

export const CreateProviderBody = Type.Object(providerFields, { additionalProperties: false });
export type CreateProviderBody = Static<typeof CreateProviderBody>;

export const UpdateProviderBody = Type.Partial(
  Type.Object({ ...providerFields, paused: Type.Boolean({ description: 'A paused provider\'s phones take no new allocation; held ones stay held.' }) }),
  { additionalProperties: false },
);
export type UpdateProviderBody = Static<typeof UpdateProviderBody>;

export const ProviderHostKeyBody = Type.Object({ address: Address, port: Type.Optional(Port) }, { additionalProperties: false });
export type ProviderHostKeyBody = Static<typeof ProviderHostKeyBody>;

export const ProviderHostKey = Type.Object({
  address: Type.String(),
  port: Type.Integer(),
  hostKeySha256: Type.String({ description: 'The fingerprint of the host key the sshd presents (as ssh-keygen -lf prints it). Nothing is trusted yet: give it back as hostKeySha256 when adding the provider once it matches what the box shows.' }),
});
export type ProviderHostKey = Static<typeof ProviderHostKey>;

export const ProviderIdParams = Type.Object({ providerId: Uuid });

/** A provider as the lab owner sees it: everything but its secrets. */
export const Provider = Type.Object({
  id: Uuid,
  name: Type.String(),
  address: Type.String(),
  port: Type.Integer(),
  username: Type.String(),
  auth: Type.Union([Type.Literal('privateKey'), Type.Literal('password')]),
  hostKeySha256: Nullable(Type.String({ description: 'The host key fingerprint pinned on the first connection.' })),
  adbPort: Type.Integer(),
  usbmuxdSocket: Type.String(),
  paused: Type.Boolean(),
  health: HostHealth,
  healthMessage: Type.Optional(Type.String({ description: 'What is wrong, in words: sshd unreachable, login refused, host key changed, no adb server answering, adb version.' })),
  checkedAt: Nullable(DateTime),
  roundTripMs: Nullable(Type.Number({ description: 'The last check: a new SSH channel and the adb server\'s version.' })),
  adbVersion: Nullable(Type.Integer({ description: 'The provider\'s adb server protocol version.' })),
  os: Nullable(Type.String({ description: 'The provider\'s `uname -s` (Linux, Darwin), read at the last connection; null until it is up.' })),
  devicectl: Nullable(
    Type.String({
      description: 'Where `xcrun --find devicectl` finds devicectl on the provider (a Mac with Xcode 15+): the hub starts WebDriverAgent on ' +
        'its iOS 17+ iPhones with it, over SSH. null: none (Linux), and WDA on those iPhones is started by hand (the phone\'s steps say how).',
    }),
  ),
  phones: Type.Integer({ description: 'Phones it reports now, in the fleet.' }),
  duplicateSerials: Type.Array(Type.String(), { description: 'Serials it reports that another host reported first: kept out of the fleet (see docs/providers.md).' }),
  createdAt: DateTime,
  updatedAt: DateTime,
});
export type Provider = Static<typeof Provider>;

export const BackupResult = Type.Object({
  dir: Type.String({ description: 'The backup: a 0700 folder laid out as a data dir (benchtop.db and blobs/) that a standby starts from (docs/providers.md). It holds no token_secret: a standby mints its own, and everyone signs in again there.' }),
  path: Type.String({ description: 'Its database (dir/benchtop.db), a complete SQLite file.' }),
  bytes: Type.Integer({ description: 'The database\'s and the blobs\' bytes.' }),
  createdAt: DateTime,
});
export type BackupResult = Static<typeof BackupResult>;

/** A provider as every signed-in caller sees it on the fleet: its health and phones, nothing about how to reach it. */
export const FleetProvider = Type.Object({
  name: Type.String(),
  health: HostHealth,
  healthMessage: Type.Optional(Type.String()),
  checkedAt: Nullable(DateTime),
  phones: Type.Integer(),
  paused: Type.Boolean(),
});
export type FleetProvider = Static<typeof FleetProvider>;
