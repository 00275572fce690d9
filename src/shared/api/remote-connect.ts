import { Type, type Static } from 'typebox';
import { DateTime, Uuid } from './common.js';

/** adbkey.pub's text: one base64 word (Android's RSAPublicKey struct), then user@host. */
const PublicKeyText = Type.String({ minLength: 1, maxLength: 2048, description: 'The text of ~/.android/adbkey.pub.' });

export const AdbKey = Type.Object({
  id: Uuid,
  title: Type.String(),
  fingerprint: Type.String({ description: 'MD5 of the key, as the phone\'s "Allow USB debugging?" dialog shows it (8D:1E:...).' }),
  createdAt: DateTime,
});
export type AdbKey = Static<typeof AdbKey>;

export const CreateAdbKeyBody = Type.Object(
  { publicKey: PublicKeyText, title: Type.Optional(Type.String({ maxLength: 100 })) },
  { additionalProperties: false },
);

export const RemoteConnectBody = Type.Object(
  {
    publicKey: Type.Optional({
      ...PublicKeyText,
      description: 'An adb public key accepted for this checkout alone (a CI job that makes a new key each run).',
    }),
  },
  { additionalProperties: false },
);

export const RemoteConnection = Type.Object({
  peer: Type.String({ description: 'The address the connection comes from (host:port).' }),
  fingerprint: Type.Union([Type.String(), Type.Null()], { description: 'The adb key it signed in with; null on iOS.' }),
  since: DateTime,
});
export type RemoteConnection = Static<typeof RemoteConnection>;

export const RemoteConnect = Type.Object({
  platform: Type.Union([Type.Literal('android'), Type.Literal('ios')]),
  address: Type.String({ description: 'host:port of the bridge (Android) or of the private usbmuxd (iPhone).' }),
  command: Type.String({ description: 'Exactly `adb connect <address>` (Android) or `export USBMUXD_SOCKET_ADDRESS=<address>` (iPhone).' }),
  webDriverAgentUrl: Type.Optional(Type.String({ description: 'iPhone: WebDriverAgent through the engine, for Appium\'s appium:webDriverAgentUrl. Carries its own secret; stops working at release.' })),
  lanCommand: Type.Optional(Type.String({ description: 'Over LAN sharing: the one command a teammate runs (Node only) to open the local end through the HTTPS port.' })),
  connections: Type.Optional(Type.Array(RemoteConnection)),
});
export type RemoteConnect = Static<typeof RemoteConnect>;
