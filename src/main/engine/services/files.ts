import { createHmac, randomBytes, randomUUID } from 'node:crypto';
import { Transform, type Readable } from 'node:stream';
import type { CreateFileBody } from '../../../shared/api/files.js';
import { BlobSourceError, type BlobStore, type StagedBlob } from '../blobs/blob-store.js';
import type { EngineConfig } from '../config.js';
import { NotAnApp, readAppInfo } from '../blobs/app-reader.js';
import { conflict, forbidden, invalid, notFound, ServiceError } from '../domain/errors.js';
import { checkUpload, signUpload } from '../domain/upload-urls.js';
import type { AppRow, FileRow } from '../store/files.js';
import { requireRole } from './auth.js';
import type { Stores } from '../store/index.js';
import type { Clock, Scope } from './scope.js';

/** A signed upload URL is good for this long; a new POST /files for the same content issues a fresh one. */
const UPLOAD_URL_TTL_MS = 60 * 60 * 1000;
/**
 * A blob committed this recently is never swept, even when no row points at it yet: an upload commits its content
 * a moment before it writes the row that refers to it.
 */
const SWEEP_GRACE_MS = 60 * 60 * 1000;
const DAY_MS = 24 * 3600 * 1000;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

export interface FileManagerOptions {
  sweepIntervalMs: number;
  log: (message: string) => void;
  /** The lab owner's retention of test results' files, in days (0: kept); read at each sweep. */
  testResultFilesDays?: () => number;
}

/** Where the client PUTs the bytes. */
export interface UploadInstructions {
  method: 'PUT';
  url: string;
  headers: Record<string, string>;
  expiresAt: number;
}

/** The signed URL's query, as the PUT received it. */
export interface UploadQuery {
  expires: number;
  nonce: string;
  signature: string;
}

class TooLarge extends Error {}

/** Passes at most `max` bytes through, and fails past that: a PUT cannot fill the disk beyond what it declared. */
function capped(source: Readable, max: number): Readable {
  let seen = 0;
  const cap = new Transform({
    transform(chunk: Buffer, _encoding, done) {
      seen += chunk.length;
      done(seen > max ? new TooLarge() : null, chunk);
    },
  });
  // Not pipeline(): that would destroy the request on a cap, and the client could never read the 400.
  source.on('error', (error) => cap.destroy(error));
  return source.pipe(cap);
}

/**
 * Stored files (app binaries) and their apps: uploads through a signed URL or a form, the check of size and
 * SHA-256, reading the app's metadata off the request path, expiry, and the sweeper that deletes blobs nothing
 * refers to any more.
 */
export class FileManager {
  private readonly signingKey: Buffer;
  private readonly inFlight = new Set<Promise<void>>();
  private timer: NodeJS.Timeout | undefined;
  private stopped = false;

  constructor(
    private readonly stores: Pick<Stores, 'files' | 'testResults'>,
    private readonly blobs: BlobStore,
    /** The lab's token secret, from which the upload URLs' signing key is derived. */
    tokenSecret: Uint8Array,
    private readonly config: Pick<EngineConfig, 'maxAssetBytes' | 'fileExpiryDays'>,
    private readonly now: Clock,
    private readonly options: FileManagerOptions,
  ) {
    // Its own key, derived from the lab's token secret: an upload signature can never pass for a token, or back.
    this.signingKey = createHmac('sha256', tokenSecret).update('benchtop file upload urls').digest();
  }

  /** Resumes what a stop interrupted, and sweeps now and then. */
  start(): void {
    for (const id of this.stores.files.processing()) this.process(id);
    const sweep = () => void this.sweep().catch((error: Error) => this.options.log(`sweeping files failed: ${error.message}`));
    sweep();
    this.timer = setInterval(sweep, this.options.sweepIntervalMs);
    this.timer.unref();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearInterval(this.timer);
    await Promise.allSettled([...this.inFlight]);
  }

  // ---- the API's operations ----

  /**
   * Declares a file by its SHA-256. The same content in the same organization is the same file: a ready one is
   * answered as it is (and kept for another expiry period), one still waiting for its bytes gets a fresh URL.
   */
  create(scope: Scope, body: CreateFileBody, apiBase: string): { file: FileRow; upload?: UploadInstructions; created: boolean } {
    requireRole(scope.role, 'readwrite');
    this.checkSize(body.filesize);
    const { files } = this.stores;
    const now = this.now();
    const sha256 = body.sha256.toLowerCase();
    let existing = files.bySha256(scope.organization.id, sha256);
    if (existing && existing.expiresAt <= now) {
      files.delete(existing.id);
      existing = undefined;
    }
    const nonce = randomBytes(16).toString('base64url');
    const expiresAt = now + this.config.fileExpiryDays * DAY_MS;
    if (!existing) {
      const file = files.create(
        {
          id: randomUUID(),
          organizationId: scope.organization.id,
          createdBy: scope.caller.user.id,
          filename: body.filename,
          size: body.filesize,
          sha256,
          status: 'pendingUpload',
          uploadNonce: nonce,
          uploadedSha256: null,
          uploadedSize: null,
          expiresAt,
        },
        now,
      );
      return { file, upload: this.instructions(file, apiBase), created: true };
    }
    if (existing.status === 'ready' || existing.status === 'processing') {
      const file = { ...existing, expiresAt: Math.max(existing.expiresAt, expiresAt), updatedAt: now };
      files.update(file);
      return { file, created: false };
    }
    // Waiting for its bytes, or failed: the upload starts over, under the name and size declared now.
    const file: FileRow = {
      ...existing,
      filename: body.filename,
      size: body.filesize,
      status: 'pendingUpload',
      failureReason: null,
      uploadNonce: nonce,
      uploadedSha256: null,
      uploadedSize: null,
      updatedAt: now,
      expiresAt,
    };
    files.update(file);
    return { file, upload: this.instructions(file, apiBase), created: false };
  }

  /**
   * The PUT to a signed URL. Nothing but the URL authorizes it, so it is checked before a byte is read: the
   * signature, the expiry, then the single use, which this request spends. The bytes stream to the blob store.
   */
  async receive(fileId: string, query: UploadQuery, body: Readable): Promise<FileRow> {
    const refusal = checkUpload(this.signingKey, { fileId, expires: query.expires, nonce: query.nonce }, query.signature, this.now());
    if (refusal === 'upload_url_invalid') throw forbidden(refusal, 'The upload URL is not one this lab signed, or it was altered.');
    if (refusal === 'upload_url_expired') throw forbidden(refusal, 'The upload URL has expired: create the file again (POST /files) for a fresh one.');
    const { files } = this.stores;
    const file = files.find(fileId);
    if (!file || file.expiresAt <= this.now()) throw notFound('file');
    if (!files.takeUploadNonce(fileId, query.nonce)) {
      throw forbidden('upload_url_used', 'The upload URL was used already; each one takes a single upload. create the file again (POST /files) for a fresh one.');
    }
    let staged: StagedBlob | undefined;
    try {
      staged = await this.blobs.stage(capped(body, file.size));
      await staged.commit();
    } catch (error) {
      await staged?.discard();
      if (error instanceof BlobSourceError && error.cause instanceof TooLarge) {
        throw invalid('file_too_large', `The upload is larger than the filesize declared, ${file.size} bytes.`);
      }
      if (error instanceof BlobSourceError) throw invalid('upload_incomplete', 'The upload ended before its end; create the file again (POST /files) for a fresh URL.');
      throw error;
    }
    files.setUploaded(fileId, staged.sha256, staged.size, this.now());
    return files.find(fileId)!;
  }

  /** Checks what the PUT delivered against what was declared; a match goes on to processing. */
  complete(scope: Scope, id: string): FileRow {
    requireRole(scope.role, 'readwrite');
    const file = this.get(scope, id);
    if (file.status !== 'pendingUpload') return file;
    if (file.uploadedSha256 === null || file.uploadedSize === null) {
      throw conflict('file_not_uploaded', 'No bytes have arrived for this file yet: PUT them to its upload URL first.');
    }
    const now = this.now();
    const failureReason =
      file.uploadedSize !== file.size
        ? `size_mismatch: ${file.uploadedSize} bytes arrived; the file was declared with ${file.size}.`
        : file.uploadedSha256 !== file.sha256
          ? `sha256_mismatch: the bytes that arrived have SHA-256 ${file.uploadedSha256}; the file was declared with ${file.sha256}.`
          : null;
    const next: FileRow = failureReason
      ? { ...file, status: 'failed', failureReason, updatedAt: now }
      : { ...file, status: 'processing', updatedAt: now };
    this.stores.files.update(next);
    if (!failureReason) this.process(id);
    return next;
  }

  /**
   * A direct upload: the content was staged from the form; its own SHA-256 decides which file it is. Everything
   * after the commit runs without a pause, so that two uploads of the same bytes cannot both create a file.
   */
  async upload(scope: Scope, filename: string, content: StagedBlob): Promise<{ file: FileRow; created: boolean }> {
    await content.commit();
    const { files } = this.stores;
    const now = this.now();
    const expiresAt = now + this.config.fileExpiryDays * DAY_MS;
    let existing = files.bySha256(scope.organization.id, content.sha256);
    if (existing && existing.expiresAt <= now) {
      files.delete(existing.id);
      existing = undefined;
    }
    if (existing && (existing.status === 'ready' || existing.status === 'processing')) {
      const file = { ...existing, expiresAt: Math.max(existing.expiresAt, expiresAt), updatedAt: now };
      files.update(file);
      return { file, created: false };
    }
    const uploaded = { filename, size: content.size, status: 'processing' as const, uploadNonce: null, uploadedSha256: content.sha256, uploadedSize: content.size, expiresAt };
    let file: FileRow;
    if (existing) {
      file = { ...existing, ...uploaded, failureReason: null, updatedAt: now };
      files.update(file);
    } else {
      file = files.create({ id: randomUUID(), organizationId: scope.organization.id, createdBy: scope.caller.user.id, sha256: content.sha256, ...uploaded }, now);
    }
    this.process(file.id);
    return { file, created: !existing };
  }

  get(scope: Scope, id: string): FileRow {
    const file = this.stores.files.get(id, scope.organization.id, this.now());
    if (!file) throw notFound('file');
    return file;
  }

  /** Newest first; `before` is a strict createdAt cursor, and one row past the page tells whether there is more. */
  list(scope: Scope, query: { limit: number; before?: number }): { files: FileRow[]; nextCursor?: number } {
    const rows = this.stores.files.page({
      organizationId: scope.organization.id,
      before: query.before ?? Number.MAX_SAFE_INTEGER,
      now: this.now(),
      limit: query.limit + 1,
    });
    const more = rows.length > query.limit;
    const page = more ? rows.slice(0, query.limit) : rows;
    return { files: page, nextCursor: more ? page[page.length - 1]!.createdAt : undefined };
  }

  /** The row goes now; its content goes with the next sweep, unless something else refers to it. */
  delete(scope: Scope, id: string): void {
    requireRole(scope.role, 'readwrite');
    this.get(scope, id);
    this.stores.files.delete(id);
  }

  /** A ready file of the organization, by id or file:<id>: what installs take. */
  readyFile(scope: Scope, ref: string): FileRow {
    const id = ref.startsWith('file:') ? ref.slice(5) : ref;
    const file = UUID.test(id) ? this.stores.files.get(id, scope.organization.id, this.now()) : undefined;
    if (!file) throw new ServiceError('not_found', 'file_not_found', `No file ${id} in this organization.`);
    if (file.status !== 'ready') {
      throw conflict('file_not_ready', `The file is ${file.status}${file.failureReason ? ` (${file.failureReason})` : ''}; only a ready file can be installed.`);
    }
    return file;
  }

  /** The app names the organization's stored files give, by package name or bundle id (the newest file's wins). */
  labels(scope: Scope): Map<string, string> {
    const labels = new Map<string, string>();
    const now = this.now();
    for (const file of this.stores.files.page({ organizationId: scope.organization.id, before: Number.MAX_SAFE_INTEGER, now, limit: 500 })) {
      const name = versionOf(file).name;
      if (file.bundleId && name && !labels.has(file.bundleId)) labels.set(file.bundleId, name);
    }
    return labels;
  }

  /** The local path of a file's content. */
  pathOf(file: FileRow): string {
    return this.blobs.pathOf(file.uploadedSha256!);
  }

  // ---- apps ----

  app(scope: Scope, id: string): { app: AppRow; files: FileRow[] } {
    const app = this.stores.files.app(id, scope.organization.id);
    const files = app ? this.stores.files.filesOfApp(app.id, this.now()) : [];
    if (!app || files.length === 0) throw notFound('app');
    return { app, files };
  }

  listApps(scope: Scope, query: { limit: number; before?: number; platform?: string }) {
    const { files } = this.stores;
    const now = this.now();
    const rows = files.appPage({
      organizationId: scope.organization.id,
      before: query.before ?? Number.MAX_SAFE_INTEGER,
      platform: query.platform ?? null,
      now,
      limit: query.limit + 1,
    });
    const more = rows.length > query.limit;
    const page = more ? rows.slice(0, query.limit) : rows;
    return {
      apps: page.map((app) => ({ app, files: files.filesOfApp(app.id, now) })),
      nextCursor: more ? page[page.length - 1]!.createdAt : undefined,
    };
  }

  // ---- housekeeping ----

  /**
   * Deletes expired files (and apps left without one) and test results' files kept past the lab's retention, then
   * every blob no file and no test-result asset refers to. Answers what went. `now` lets a test sweep as at a later
   * time without moving the whole engine's clock, which would let every other timer (a holder's idle release among
   * them) see that time too.
   */
  async sweep(now = this.now()): Promise<{ files: number; testResults: number; blobs: number }> {
    const { files, testResults } = this.stores;
    const expired = files.deleteExpired(now);
    const keepDays = this.options.testResultFilesDays?.() ?? 0;
    const aged = keepDays > 0 ? testResults.removeFilesBefore(now - keepDays * DAY_MS, now) : { results: 0, assets: 0 };
    if (aged.results > 0) this.options.log(`removed the files of ${aged.results} test results (${aged.assets} files), kept ${keepDays} days as the lab settings say`);
    const inUse = files.blobsInUse();
    let removed = 0;
    for (const blob of await this.blobs.list()) {
      if (this.stopped) break;
      if (inUse.has(blob.sha256) || blob.committedAt > now - SWEEP_GRACE_MS) continue;
      await this.blobs.remove(blob.sha256);
      removed++;
    }
    return { files: expired, testResults: aged.results, blobs: removed };
  }

  // ---- internals ----

  private checkSize(size: number): void {
    if (size > this.config.maxAssetBytes) {
      throw invalid('file_too_large', `The file is larger than the lab's limit of ${this.config.maxAssetBytes} bytes (BENCHTOP_MAX_ASSET_BYTES).`);
    }
  }

  private instructions(file: FileRow, apiBase: string): UploadInstructions {
    const expires = this.now() + UPLOAD_URL_TTL_MS;
    const nonce = file.uploadNonce!;
    const signature = signUpload(this.signingKey, { fileId: file.id, expires, nonce });
    const query = new URLSearchParams({ expires: String(expires), nonce, signature });
    return {
      method: 'PUT',
      url: `${apiBase}/files/${file.id}/content?${query}`,
      headers: { 'content-type': 'application/octet-stream' },
      expiresAt: expires,
    };
  }

  /** Reads the app off the request path; the file is ready or failed when it settles. */
  private process(id: string): void {
    const work = this.read(id)
      .catch((error: Error) => this.options.log(`processing file ${id} failed: ${error.message}`))
      .finally(() => this.inFlight.delete(work));
    this.inFlight.add(work);
  }

  private async read(id: string): Promise<void> {
    const { files } = this.stores;
    const file = files.find(id);
    if (!file || file.status !== 'processing') return;
    let outcome: Partial<FileRow>;
    try {
      const info = await readAppInfo(this.blobs.pathOf(file.uploadedSha256!));
      outcome = { platform: info.platform, bundleId: info.bundleId, metadata: info.metadata };
    } catch (error) {
      outcome = {
        failureReason: error instanceof NotAnApp ? `not_an_app: ${error.message}` : `unreadable: ${(error as Error).message}`,
      };
    }
    if (this.stopped) return;
    // Deleted or restarted meanwhile: only the file as it still is may change.
    const current = files.find(id);
    if (!current || current.status !== 'processing' || current.uploadedSha256 !== file.uploadedSha256) return;
    const now = this.now();
    if (outcome.failureReason) files.update({ ...current, status: 'failed', failureReason: outcome.failureReason, updatedAt: now });
    else files.ready({ ...current, ...outcome }, now);
  }
}

/** A file's app name, version and build, whichever platform's metadata it has. */
export function versionOf(file: FileRow): { name: string | null; version: string | null; build: string | null } {
  const m = file.metadata ?? {};
  return {
    name: (m.label ?? m.displayName ?? null) as string | null,
    version: (m.versionName ?? m.shortVersion ?? null) as string | null,
    build: m.versionCode != null ? String(m.versionCode) : ((m.bundleVersion ?? null) as string | null),
  };
}
