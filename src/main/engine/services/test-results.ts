import { randomUUID } from 'node:crypto';
import type { FileHandle } from 'node:fs/promises';
import type { CreateTestResultBody, UpdateTestResultBody } from '../../../shared/api/test-results.js';
import type { BlobStore, StagedBlob } from '../blobs/blob-store.js';
import { contentTypeOf } from '../domain/content-types.js';
import { invalid, notFound, ServiceError } from '../domain/errors.js';
import type { AssetRow, JsonObject, TestResultFields, TestResultRow } from '../store/test-results.js';
import type { Stores } from '../store/index.js';
import type { Clock, Scope } from './scope.js';

/*
 * Test results are reported by CI, usually with a read-only key: the spec declares no 403 for any test-result
 * operation, so every member of the organization may create and update them, whatever the role.
 */

/** Names longer than this are refused; a file name is far shorter. */
const MAX_ASSET_NAME = 1024;

const timeOf = (value: string | null | undefined) => (value == null ? null : Date.parse(value));

/** What an upload carried; either part may be missing, which is the client's mistake to report. */
export interface AssetUpload {
  name?: string;
  content?: StagedBlob;
  /** The content type the file part declared. */
  declaredType?: string;
}

/** Test results and their assets, as reporters (Playwright's, CI scripts) send them. */
export class TestResults {
  constructor(
    private readonly stores: Pick<Stores, 'testResults' | 'sessions'>,
    private readonly blobs: Pick<BlobStore, 'open'>,
    private readonly now: Clock,
  ) {}

  /** A session the result points at must be one of the same organization. */
  private checkSession(scope: Scope, sessionId: string | null): void {
    if (sessionId !== null && !this.stores.sessions.get(sessionId, scope.organization.id)) {
      throw invalid('session_not_found', 'sessionId names no session of this organization.');
    }
  }

  /** A new run, queued unless the reporter says otherwise; unknown fields of the body were ignored by the API. */
  createTestResult(scope: Scope, body: CreateTestResultBody): TestResultRow {
    const fields: TestResultFields = {
      name: body.name,
      userAgent: body.userAgent ?? null,
      status: body.status ?? 'queued',
      reason: body.reason ?? null,
      git: (body.git as JsonObject | null | undefined) ?? null,
      tags: body.tags ?? [],
      environment: (body.environment as JsonObject | string | null | undefined) ?? null,
      stats: (body.stats as JsonObject | null | undefined) ?? null,
      sessionId: body.sessionId ?? null,
      startedAt: timeOf(body.startedAt),
      finishedAt: timeOf(body.finishedAt),
    };
    this.checkSession(scope, fields.sessionId);
    return this.stores.testResults.create(randomUUID(), scope.organization.id, scope.caller.user.id, fields, this.now());
  }

  getTestResult(scope: Scope, id: string): TestResultRow {
    const row = this.stores.testResults.get(id, scope.organization.id);
    if (!row) throw notFound('test result');
    return row;
  }

  /** Only the fields present in the body change; null clears a nullable field. */
  updateTestResult(scope: Scope, id: string, body: UpdateTestResultBody): TestResultRow {
    const row = { ...this.getTestResult(scope, id) };
    if (body.name !== undefined) row.name = body.name;
    if (body.userAgent !== undefined) row.userAgent = body.userAgent;
    if (body.status !== undefined) row.status = body.status;
    if (body.reason !== undefined) row.reason = body.reason;
    if (body.git !== undefined) row.git = body.git as JsonObject | null;
    if (body.tags !== undefined) row.tags = body.tags;
    if (body.environment !== undefined) row.environment = body.environment as JsonObject | string | null;
    if (body.stats !== undefined) row.stats = body.stats as JsonObject | null;
    if (body.startedAt !== undefined) row.startedAt = timeOf(body.startedAt);
    if (body.finishedAt !== undefined) row.finishedAt = timeOf(body.finishedAt);
    if (body.sessionId !== undefined) {
      this.checkSession(scope, body.sessionId);
      row.sessionId = body.sessionId;
    }
    // Never before createdAt or the previous update, even when createdAt was moved ahead to keep it unique.
    row.updatedAt = Math.max(this.now(), row.updatedAt);
    this.stores.testResults.update(row);
    return row;
  }

  /**
   * Newest first. `before` is a strict createdAt cursor; one row past the page tells whether a next page exists,
   * so nothing is counted.
   */
  listTestResults(
    scope: Scope,
    query: { limit: number; before?: number; status?: string; sessionId?: string; tag?: string },
  ): { testResults: TestResultRow[]; nextCursor?: number } {
    const rows = this.stores.testResults.page({
      organizationId: scope.organization.id,
      before: query.before ?? Number.MAX_SAFE_INTEGER,
      status: query.status ?? null,
      sessionId: query.sessionId ?? null,
      tag: query.tag ?? null,
      limit: query.limit + 1,
    });
    const more = rows.length > query.limit;
    const page = more ? rows.slice(0, query.limit) : rows;
    return { testResults: page, nextCursor: more ? page[page.length - 1]!.createdAt : undefined };
  }

  listAssets(scope: Scope, testResultId: string): AssetRow[] {
    this.getTestResult(scope, testResultId);
    return this.stores.testResults.assets(testResultId);
  }

  /**
   * Files the uploaded content under its SHA-256 and records the asset. The caller discards the staged content
   * if this throws; after it returns, the content is committed.
   */
  async addAsset(scope: Scope, testResultId: string, upload: AssetUpload): Promise<AssetRow> {
    if (!upload.content) throw invalid('invalid_upload', 'The upload has no file part: send the content as the form field "file".');
    if (upload.name === undefined || upload.name.trim() === '') {
      throw invalid('invalid_upload', 'The upload has no name: send the asset\'s file name as the form field "name".');
    }
    if (upload.name.length > MAX_ASSET_NAME) throw invalid('invalid_upload', `The asset name is longer than ${MAX_ASSET_NAME} characters.`);
    const { content, name } = upload;
    await content.commit();
    // Looked up again after the upload, which takes a while: the organization may have been deleted meanwhile.
    this.getTestResult(scope, testResultId);
    const asset: AssetRow = {
      id: randomUUID(),
      testResultId,
      name,
      contentType: contentTypeOf(upload.declaredType, name),
      size: content.size,
      sha256: content.sha256,
      createdAt: this.now(),
    };
    this.stores.testResults.addAsset(asset);
    return asset;
  }

  /** The asset and an open handle on its content, opened before anything is sent so that a failure is still an error reply. */
  async openAsset(
    scope: Scope,
    testResultId: string,
    assetId: string,
  ): Promise<{ asset: AssetRow; content: FileHandle }> {
    this.getTestResult(scope, testResultId);
    const asset = this.stores.testResults.asset(assetId, testResultId);
    if (!asset) throw notFound('asset');
    try {
      return { asset, content: await this.blobs.open(asset.sha256) };
    } catch (error) {
      // The row outlived its content (a data dir restored without its blobs, a disk that lost them): the asset is
      // listed but cannot be served, which is not the server's fault at this moment.
      if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
      throw new ServiceError('not_found', 'asset_content_missing', 'The asset is recorded but its content is not on this lab\'s disk (was the lab restored without its blobs?).');
    }
  }
}
