import type { AppMetadata, App as AppView, CreatedFile, StoredFile } from '../../../../shared/api/files.js';
import { iso } from '../../domain/time.js';
import { versionOf, type UploadInstructions } from '../../services/files.js';
import type { AppRow, FileRow } from '../../store/files.js';

/** Stored files and the apps they group, as the API shows them. */

export const presentFile = (f: FileRow): StoredFile => ({
  id: f.id,
  filename: f.filename,
  size: f.size,
  sha256: f.sha256,
  status: f.status,
  ...(f.failureReason ? { failureReason: f.failureReason } : {}),
  ...(f.platform ? { platform: f.platform } : {}),
  ...(f.bundleId ? { bundleId: f.bundleId } : {}),
  ...(f.metadata ? { metadata: f.metadata as AppMetadata } : {}),
  ...(f.appId ? { appId: f.appId } : {}),
  createdAt: iso(f.createdAt),
  expiresAt: iso(f.expiresAt),
});

export const presentCreated = (f: FileRow, upload: UploadInstructions | undefined): CreatedFile => ({
  ...presentFile(f),
  ...(upload ? { upload: { ...upload, expiresAt: iso(upload.expiresAt) } } : {}),
});

/** An app as its newest ready file describes it, with every ready file it groups. */
export const presentApp = ({ app, files }: { app: AppRow; files: FileRow[] }): AppView => {
  const newest = versionOf(files[0]!);
  return {
    id: app.id,
    platform: app.platform,
    bundleId: app.bundleId,
    name: newest.name ?? app.bundleId,
    latestVersion: newest.version,
    files: files.map((f) => {
      const { version, build } = versionOf(f);
      return { id: f.id, version, build, createdAt: iso(f.createdAt) };
    }),
    createdAt: iso(app.createdAt),
    updatedAt: iso(app.updatedAt),
  };
};
