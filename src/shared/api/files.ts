import { Type, type Static } from 'typebox';
import { DateTime, Uuid } from './common.js';

export const FileStatus = Type.Union(
  [Type.Literal('pendingUpload'), Type.Literal('processing'), Type.Literal('ready'), Type.Literal('failed')],
  { description: 'pendingUpload until the bytes arrive and complete is called; processing while the app is read; then ready or failed.' },
);
export type FileStatus = Static<typeof FileStatus>;

export const Platform = Type.Union([Type.Literal('android'), Type.Literal('ios')]);
export type Platform = Static<typeof Platform>;

const Sha256 = Type.String({ pattern: '^[0-9a-fA-F]{64}$', description: 'Hex SHA-256 of the content.' });

/** What was read from the app: an APK's manifest, or an IPA's Info.plist. */
export const AppMetadata = Type.Union([
  Type.Object({
    package: Type.String(),
    versionName: Type.Union([Type.String(), Type.Null()]),
    versionCode: Type.Union([Type.Integer(), Type.Null()]),
    label: Type.Union([Type.String(), Type.Null()]),
    minSdk: Type.Union([Type.Integer(), Type.Null()]),
  }, { description: 'An APK, from its binary AndroidManifest.xml.' }),
  Type.Object({
    bundleIdentifier: Type.String({ description: 'CFBundleIdentifier' }),
    shortVersion: Type.Union([Type.String(), Type.Null()], { description: 'CFBundleShortVersionString' }),
    bundleVersion: Type.Union([Type.String(), Type.Null()], { description: 'CFBundleVersion (the build)' }),
    displayName: Type.Union([Type.String(), Type.Null()], { description: 'CFBundleDisplayName, else CFBundleName' }),
  }, { description: 'An IPA, from Payload/*.app/Info.plist (binary or XML).' }),
]);
export type AppMetadata = Static<typeof AppMetadata>;

export const StoredFile = Type.Object({
  id: Uuid,
  filename: Type.String(),
  size: Type.Integer({ description: 'Bytes, as declared at creation (and checked at completion).' }),
  sha256: Type.String(),
  status: FileStatus,
  failureReason: Type.Optional(Type.String()),
  platform: Type.Optional(Platform),
  bundleId: Type.Optional(Type.String({ description: 'The package name (Android) or CFBundleIdentifier (iOS).' })),
  metadata: Type.Optional(AppMetadata),
  appId: Type.Optional(Uuid),
  createdAt: DateTime,
  expiresAt: DateTime,
});
export type StoredFile = Static<typeof StoredFile>;

export const UploadInstructions = Type.Object({
  method: Type.Literal('PUT'),
  url: Type.String({ description: 'On this engine; signed, single-use, and valid until expiresAt.' }),
  headers: Type.Record(Type.String(), Type.String()),
  expiresAt: DateTime,
});

/** The file plus, while it awaits its bytes, where to PUT them. */
export const CreatedFile = Type.Intersect([StoredFile, Type.Object({ upload: Type.Optional(UploadInstructions) })]);
export type CreatedFile = Static<typeof CreatedFile>;

export const CreateFileBody = Type.Object(
  {
    filename: Type.String({ minLength: 1, maxLength: 255, pattern: '\\S' }),
    filesize: Type.Integer({ minimum: 1, description: 'Bytes.' }),
    sha256: Sha256,
  },
  { additionalProperties: false },
);
export type CreateFileBody = Static<typeof CreateFileBody>;

export const FileListQuery = Type.Object({
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 500, default: 100 })),
  before: Type.Optional(Type.String({ format: 'date-time', description: 'Only files created strictly before this time: the previous page\'s nextCursor.' })),
});

export const FileUploadForm = Type.Object({
  file: Type.String({ format: 'binary', description: 'The .apk or .ipa; its part\'s filename names the file.' }),
});

export const App = Type.Object({
  id: Uuid,
  platform: Platform,
  bundleId: Type.String(),
  name: Type.String({ description: 'The label or display name of the newest file, else the bundle id.' }),
  latestVersion: Type.Union([Type.String(), Type.Null()], { description: 'versionName or CFBundleShortVersionString of the newest file.' }),
  files: Type.Array(
    Type.Object({ id: Uuid, version: Type.Union([Type.String(), Type.Null()]), build: Type.Union([Type.String(), Type.Null()]), createdAt: DateTime }),
    { description: 'The app\'s ready files, newest first.' },
  ),
  createdAt: DateTime,
  updatedAt: DateTime,
});
export type App = Static<typeof App>;

export const AppListQuery = Type.Object({
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 500, default: 100 })),
  before: Type.Optional(Type.String({ format: 'date-time', description: 'Only apps created strictly before this time: the previous page\'s nextCursor.' })),
  platform: Type.Optional(Platform),
});

export const InstallBody = Type.Object(
  {
    file: Type.String({ minLength: 1, maxLength: 100, description: 'A file id, or file:<fileId>.' }),
    launch: Type.Optional(Type.Boolean({ description: 'Launch the app once installed.', default: false })),
  },
  { additionalProperties: false },
);
export type InstallBody = Static<typeof InstallBody>;

export const InstallResult = Type.Object({
  file: Uuid,
  status: Type.Literal('installed'),
  bundleId: Type.String(),
  launched: Type.Boolean(),
});
export type InstallResult = Static<typeof InstallResult>;
