import { randomUUID } from 'node:crypto';
import { uniqueCreatedAt } from '../domain/time.js';
import type { Db } from './db.js';

export type FileStatus = 'pendingUpload' | 'processing' | 'ready' | 'failed';
export type Platform = 'android' | 'ios';

/** What processing read from an app, in the API's shape (see AppMetadata in src/shared/api/files.ts). */
export type AppMetadata = Record<string, string | number | null>;

export interface FileRow {
  id: string;
  organizationId: string;
  createdBy: string | null;
  filename: string;
  size: number;
  sha256: string;
  status: FileStatus;
  failureReason: string | null;
  platform: Platform | null;
  bundleId: string | null;
  metadata: AppMetadata | null;
  appId: string | null;
  uploadNonce: string | null;
  uploadedSha256: string | null;
  uploadedSize: number | null;
  createdAt: number;
  updatedAt: number;
  expiresAt: number;
}

export interface AppRow {
  id: string;
  organizationId: string;
  platform: Platform;
  bundleId: string;
  createdAt: number;
  updatedAt: number;
}

type StoredFile = Omit<FileRow, 'metadata'> & { metadata: string | null };

const COLUMNS = `id, organization_id AS organizationId, created_by AS createdBy, filename, size, sha256, status,
  failure_reason AS failureReason, platform, bundle_id AS bundleId, metadata, app_id AS appId, upload_nonce AS uploadNonce,
  uploaded_sha256 AS uploadedSha256, uploaded_size AS uploadedSize, created_at AS createdAt, updated_at AS updatedAt,
  expires_at AS expiresAt`;
const APP_COLUMNS = `id, organization_id AS organizationId, platform, bundle_id AS bundleId, created_at AS createdAt, updated_at AS updatedAt`;

const parsed = (row: StoredFile): FileRow => ({ ...row, metadata: row.metadata === null ? null : (JSON.parse(row.metadata) as AppMetadata) });

interface PageParams {
  organizationId: string;
  before: number;
  now: number;
  limit: number;
}

/**
 * Files and apps. A file past its expiresAt is gone for every reader at once, whether or not the sweeper has
 * deleted its row yet: each query here takes `now`.
 */
export function fileStore(db: Db) {
  const byId = db.prepare<[string, string, number], StoredFile>(
    `SELECT ${COLUMNS} FROM files WHERE id = ? AND organization_id = ? AND expires_at > ?`,
  );
  const byIdAnyOrg = db.prepare<[string], StoredFile>(`SELECT ${COLUMNS} FROM files WHERE id = ?`);
  const bySha = db.prepare<[string, string], StoredFile>(`SELECT ${COLUMNS} FROM files WHERE organization_id = ? AND sha256 = ?`);
  const newest = db.prepare<[string], { createdAt: number }>(
    'SELECT created_at AS createdAt FROM files WHERE organization_id = ? ORDER BY created_at DESC LIMIT 1',
  );
  const insert = db.prepare(
    `INSERT INTO files (id, organization_id, created_by, filename, size, sha256, status, upload_nonce, uploaded_sha256,
       uploaded_size, created_at, updated_at, expires_at)
     VALUES (@id, @organizationId, @createdBy, @filename, @size, @sha256, @status, @uploadNonce, @uploadedSha256,
       @uploadedSize, @createdAt, @createdAt, @expiresAt)`,
  );
  const page = db.prepare<[PageParams], StoredFile>(
    `SELECT ${COLUMNS} FROM files WHERE organization_id = @organizationId AND created_at < @before AND expires_at > @now
     ORDER BY created_at DESC LIMIT @limit`,
  );
  const update = db.prepare(
    `UPDATE files SET filename = @filename, size = @size, status = @status, failure_reason = @failureReason,
       platform = @platform, bundle_id = @bundleId, metadata = @metadata, app_id = @appId, upload_nonce = @uploadNonce,
       uploaded_sha256 = @uploadedSha256, uploaded_size = @uploadedSize, updated_at = @updatedAt, expires_at = @expiresAt
     WHERE id = @id`,
  );
  const takeNonce = db.prepare(
    `UPDATE files SET upload_nonce = NULL WHERE id = ? AND upload_nonce = ? AND status = 'pendingUpload'`,
  );
  const setUploaded = db.prepare(
    `UPDATE files SET uploaded_sha256 = ?, uploaded_size = ?, updated_at = ? WHERE id = ? AND status = 'pendingUpload'`,
  );
  const processing = db.prepare<[], { id: string }>(`SELECT id FROM files WHERE status = 'processing'`);
  const remove = db.prepare('DELETE FROM files WHERE id = ?');
  const expired = db.prepare<[number], { id: string; appId: string | null }>(
    'SELECT id, app_id AS appId FROM files WHERE expires_at <= ?',
  );
  const blobsInUse = db.prepare<[], { sha256: string }>(
    `SELECT uploaded_sha256 AS sha256 FROM files WHERE uploaded_sha256 IS NOT NULL
     UNION SELECT sha256 FROM test_result_assets
     UNION SELECT json_extract(result, '$.image.sha256') FROM chat_tool_calls WHERE json_extract(result, '$.image.sha256') IS NOT NULL`,
  );

  const appById = db.prepare<[string, string], AppRow>(`SELECT ${APP_COLUMNS} FROM apps WHERE id = ? AND organization_id = ?`);
  const appByKey = db.prepare<[string, string, string], AppRow>(
    `SELECT ${APP_COLUMNS} FROM apps WHERE organization_id = ? AND platform = ? AND bundle_id = ?`,
  );
  const newestApp = db.prepare<[string], { createdAt: number }>(
    'SELECT created_at AS createdAt FROM apps WHERE organization_id = ? ORDER BY created_at DESC LIMIT 1',
  );
  const insertApp = db.prepare(
    `INSERT INTO apps (id, organization_id, platform, bundle_id, created_at, updated_at)
     VALUES (@id, @organizationId, @platform, @bundleId, @createdAt, @createdAt)`,
  );
  const touchApp = db.prepare('UPDATE apps SET updated_at = max(updated_at, ?) WHERE id = ?');
  const appPage = db.prepare<[PageParams & { platform: string | null }], AppRow>(
    `SELECT ${APP_COLUMNS} FROM apps WHERE organization_id = @organizationId AND created_at < @before
       AND (@platform IS NULL OR platform = @platform)
       AND EXISTS (SELECT 1 FROM files WHERE app_id = apps.id AND status = 'ready' AND expires_at > @now)
     ORDER BY created_at DESC LIMIT @limit`,
  );
  const filesOfApp = db.prepare<[string, number], StoredFile>(
    `SELECT ${COLUMNS} FROM files WHERE app_id = ? AND status = 'ready' AND expires_at > ? ORDER BY created_at DESC`,
  );
  const emptyApps = db.prepare(`DELETE FROM apps WHERE NOT EXISTS (SELECT 1 FROM files WHERE app_id = apps.id)`);

  const installsOf = db.prepare<[string], { fileId: string }>(
    'SELECT file_id AS fileId FROM allocation_installs WHERE allocation_id = ? ORDER BY position',
  );
  const insertInstall = db.prepare('INSERT INTO allocation_installs (allocation_id, position, file_id) VALUES (?, ?, ?)');

  const write = (row: FileRow) =>
    update.run({ ...row, metadata: row.metadata === null ? null : JSON.stringify(row.metadata) });

  return {
    /** The file if it belongs to the organization and has not expired. */
    get: (id: string, organizationId: string, now: number): FileRow | undefined => {
      const row = byId.get(id, organizationId, now);
      return row && parsed(row);
    },
    /** Any file by id, expired or not: for the upload URL (which carries its own proof) and processing. */
    find: (id: string): FileRow | undefined => {
      const row = byIdAnyOrg.get(id);
      return row && parsed(row);
    },
    bySha256: (organizationId: string, sha256: string): FileRow | undefined => {
      const row = bySha.get(organizationId, sha256);
      return row && parsed(row);
    },
    create: (row: Omit<FileRow, 'createdAt' | 'updatedAt' | 'failureReason' | 'platform' | 'bundleId' | 'metadata' | 'appId'>, now: number): FileRow =>
      db.transaction(() => {
        const createdAt = uniqueCreatedAt(now, newest.get(row.organizationId)?.createdAt);
        insert.run({ ...row, createdAt });
        return { ...row, createdAt, updatedAt: createdAt, failureReason: null, platform: null, bundleId: null, metadata: null, appId: null };
      }).immediate(),
    /** Writes every mutable field of the row. */
    update: (row: FileRow) => void write(row),
    /** Spends the upload URL's single use: true for exactly one caller. */
    takeUploadNonce: (id: string, nonce: string) => takeNonce.run(id, nonce).changes === 1,
    setUploaded: (id: string, sha256: string, size: number, now: number) => setUploaded.run(sha256, size, now, id).changes === 1,
    /** Files left processing by a stop or a crash. */
    processing: () => processing.all().map((r) => r.id),
    page: (query: PageParams): FileRow[] => page.all(query).map(parsed),
    /** Deletes the file, and its app when it was the app's last file. */
    delete: (id: string) =>
      db.transaction(() => {
        remove.run(id);
        emptyApps.run();
      }).immediate(),
    /** Deletes every file expired at `now`, and the apps left without files; answers how many files went. */
    deleteExpired: (now: number): number =>
      db.transaction(() => {
        const rows = expired.all(now);
        for (const r of rows) remove.run(r.id);
        if (rows.length > 0) emptyApps.run();
        return rows.length;
      }).immediate(),
    /** Every blob a row points at: files' uploaded content and test-result assets. */
    blobsInUse: (): Set<string> => new Set(blobsInUse.all().map((r) => r.sha256)),

    /** Marks the file ready under its app, creating the app for a new organization, platform and bundle id. */
    ready: (row: FileRow, now: number): FileRow =>
      db.transaction(() => {
        let app = appByKey.get(row.organizationId, row.platform!, row.bundleId!);
        if (!app) {
          const createdAt = uniqueCreatedAt(now, newestApp.get(row.organizationId)?.createdAt);
          app = { id: randomUUID(), organizationId: row.organizationId, platform: row.platform!, bundleId: row.bundleId!, createdAt, updatedAt: createdAt };
          insertApp.run(app);
        } else {
          touchApp.run(now, app.id);
        }
        const ready: FileRow = { ...row, status: 'ready', failureReason: null, appId: app.id, updatedAt: now };
        write(ready);
        return ready;
      }).immediate(),
    app: (id: string, organizationId: string) => appById.get(id, organizationId),
    /** Apps with at least one live ready file, newest first. */
    appPage: (query: PageParams & { platform: string | null }) => appPage.all(query),
    /** The app's live ready files, newest first. */
    filesOfApp: (appId: string, now: number): FileRow[] => filesOfApp.all(appId, now).map(parsed),

    /** The files an allocation asked for, in order. */
    installsOf: (allocationId: string) => installsOf.all(allocationId).map((r) => r.fileId),
    addInstalls: (allocationId: string, fileIds: readonly string[]) =>
      db.transaction(() => fileIds.forEach((fileId, i) => insertInstall.run(allocationId, i, fileId))).immediate(),
  };
}
