import { Type, type Static } from 'typebox';
import { DateTime, Nullable, RoleName, Uuid } from './common.js';
import { InvitationSecret } from './organizations.js';

export const User = Type.Object({
  id: Uuid,
  email: Type.String(),
  name: Type.String(),
  labOwner: Type.Boolean({ description: 'True for the lab owner, the first account of this Benchtop.' }),
  createdAt: DateTime,
});
export type User = Static<typeof User>;

const Email = Type.String({ format: 'email', maxLength: 254 });
const Password = Type.String({ minLength: 8, maxLength: 1024 });

export const LoginBody = Type.Object({ email: Email, password: Type.String({ minLength: 1, maxLength: 1024 }) }, { additionalProperties: false });
export const SignupBody = Type.Object(
  {
    email: Email,
    password: Password,
    name: Type.Optional(Type.String({ maxLength: 100 })),
    invitation: Type.Optional({
      ...InvitationSecret,
      description: "The secret of an invitation's link (the last part of its path): signs up its email even while sign-up is invitation-only, and joins the organization at once.",
    }),
  },
  { additionalProperties: false },
);
export const AuthToken = Type.Object({ token: Type.String(), expiresAt: DateTime, user: User });
export type AuthToken = Static<typeof AuthToken>;

export const ApiKey = Type.Object({
  id: Uuid,
  name: Type.String(),
  apiKeySuffix: Type.String({ description: 'The last characters of the secret, to tell keys apart.' }),
  createdAt: DateTime,
  lastUsedAt: Nullable(DateTime),
});
export type ApiKey = Static<typeof ApiKey>;
export const CreatedApiKey = Type.Object({
  ...ApiKey.properties,
  apiKey: Type.String({ description: 'The full secret, mob_<secret>. Shown once, never again.' }),
});
export const CreateApiKeyBody = Type.Object(
  { name: Type.String({ minLength: 1, maxLength: 100 }) },
  { additionalProperties: false },
);

const AdbAddress = Type.Object(
  {
    host: Type.String({ minLength: 1, maxLength: 253, pattern: '^[A-Za-z0-9._:-]+$', description: 'Host name or IP address of the adb server.' }),
    port: Type.Integer({ minimum: 1, maximum: 65535 }),
  },
  { additionalProperties: false },
);
const Quota = Type.Integer({ minimum: 0, maximum: 10_000 });

export const WebDriverVideo = Type.Union([Type.Literal('on'), Type.Literal('retain-on-failure'), Type.Literal('off')], {
  description:
    'The video of a WebDriver run that does not say (benchtop:options.video): "on" keeps one (the default), "retain-on-failure" records it and keeps it only if the run does not pass, "off" records none. A run that says chooses for itself.',
});
export type WebDriverVideo = Static<typeof WebDriverVideo>;

export const LabSettings = Type.Object({
  signupOpen: Type.Boolean(),
  lanSharing: Type.Object({
    enabled: Type.Boolean({ description: 'The API and GUI are also served over HTTPS on every interface.' }),
    port: Type.Integer(),
    urls: Type.Array(Type.String(), { description: 'One https URL per LAN IPv4 address, then the host name; empty while disabled.' }),
    certificateSha256: Nullable(Type.String({ description: "The self-signed certificate's SHA-256 fingerprint, for teammates to check; null until first enabled." })),
  }),
  secretStore: Type.Union([Type.Literal('keychain'), Type.Literal('file')], {
    description: 'Where Mac host credentials are kept: "file" means no OS keychain was found, and they are in a 0600 file in the data dir.',
  }),
  adb: Type.Object(
    { enabled: Type.Boolean(), host: Type.String(), port: Type.Integer() },
    { description: 'The adb server the Android fleet tracks; a changed address is tracked at once, and kept across restarts.' },
  ),
  usbmuxd: Type.Object(
    { enabled: Type.Boolean(), address: Type.String() },
    { description: 'The usbmuxd the iOS fleet tracks (BENCHTOP_USBMUXD_ADDRESS): UNIX:/path or host:port.' },
  ),
  iosTunnel: Type.Object(
    {
      enabled: Type.Boolean({ description: 'Whether the lab starts WebDriverAgent on iOS 17.4+ iPhones through a go-ios userspace tunnel (the iOS fleet is on and go-ios was found).' }),
      goIos: Nullable(Type.String({ description: 'The go-ios binary it runs (BENCHTOP_GO_IOS; by default npm\'s go-ios for this machine); null: none.' })),
      developerDiskImage: Nullable(
        Type.String({ description: 'The personalized Developer Disk Image the lab mounts on iOS 17+ iPhones that lack it (BENCHTOP_DDI_PATH: the Restore folder of Xcode\'s iOS.ddi); null: none set, and such a phone\'s steps say how.' }),
      ),
    },
    { description: 'iPhones on iOS 17.4 and later (docs/iphones.md).' },
  ),
  quotas: Type.Object(
    { devices: Type.Integer(), instances: Type.Integer() },
    { description: 'Devices and instances each organization may hold at once.' },
  ),  deviceIdleSeconds: Type.Integer({
    description: 'An allocation with no activity (an action, screenshot, elements, install or logs call, or a connected live screen) for this long is released with releaseReason idle_timeout; 0 means never.',
  }),
  deviceIdleMinSeconds: Type.Integer({ description: 'The least non-zero deviceIdleSeconds the lab accepts.' }),
  reservationMaxHours: Type.Integer({ description: 'The longest window a reservation may book.' }),
  remoteConnectOnLan: Type.Object(
    {
      enabled: Type.Boolean({
        description:
          'Remote-connect listeners (adb bridges, private usbmuxd and WebDriverAgent ports) listen on the LAN address in plain TCP, and remote-connect answers that address, so a teammate runs `adb connect` to it directly. Anyone on the LAN can reach those ports: the adb key still guards Android, but usbmuxd and WebDriverAgent have none. Off (the default): loopback only, and over LAN sharing the bytes travel inside the HTTPS port.',
      }),
      host: Nullable(Type.String({ description: "The LAN address they listen on while enabled: LAN sharing's first address. null when this machine has no LAN IPv4 address." })),
    },
    { description: 'Plain adb (and usbmuxd) on the LAN for remote connections; switching it either way closes the remote connections open on the other address.' },
  ),
  testResultFiles: Type.Object(
    {
      keepDays: Type.Integer({ description: "A test result's files are removed this many days after they were stored; 0 keeps them (the default, BENCHTOP_TEST_RESULT_FILES_DAYS)." }),
      storedBytes: Type.Integer({ description: "What every organization's test results' files take on disk now, each content counted once." }),
      diskFreeBytes: Nullable(Type.Integer({ description: "Free space on the disk of the lab's data dir; null where the system does not say." })),
    },
    { description: "Test results' files (a WebDriver run's video and logs, a reporter's traces and screenshots): how long the lab keeps them, and the space they take. The results themselves are kept; a result whose files went has filesRemovedAt." },
  ),
  webDriverVideo: WebDriverVideo,
});
export type LabSettings = Static<typeof LabSettings>;

export const LabSettingsPatch = Type.Object(
  {
    signupOpen: Type.Optional(Type.Boolean()),
    lanSharing: Type.Optional(Type.Boolean()),
    adb: Type.Optional(AdbAddress),
    quotas: Type.Optional(Type.Object({ devices: Type.Optional(Quota), instances: Type.Optional(Quota) }, { additionalProperties: false })),
    deviceIdleSeconds: Type.Optional(Type.Integer({ minimum: 0, maximum: 7 * 24 * 3600, description: '0 (never), or at least 10.' })),
    reservationMaxHours: Type.Optional(Type.Integer({ minimum: 1, maximum: 24 * 31 })),
    remoteConnectOnLan: Type.Optional(Type.Boolean()),
    testResultFiles: Type.Optional(
      Type.Object(
        { keepDays: Type.Integer({ minimum: 0, maximum: 3650, description: '0 keeps them; else 1 to 3650 days. Files older than that are removed at once, and from then on as they age.' }) },
        { additionalProperties: false },
      ),
    ),
    webDriverVideo: Type.Optional(WebDriverVideo),
  },
  { additionalProperties: false },
);
export type LabSettingsPatch = Static<typeof LabSettingsPatch>;

export { RoleName };
