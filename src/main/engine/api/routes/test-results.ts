import multipart, { type Multipart } from '@fastify/multipart';
import type { FastifyRequest } from 'fastify';
import { Readable } from 'node:stream';
import { Type } from 'typebox';
import { List, Uuid } from '../../../../shared/api/common.js';
import {
  Asset,
  AssetUploadForm,
  CreateTestResultBody,
  TestResult,
  TestResultListQuery,
  UpdateTestResultBody,
} from '../../../../shared/api/test-results.js';
import { BlobSourceError } from '../../blobs/blob-store.js';
import { byteRange } from '../../domain/byte-range.js';
import { invalid, ServiceError } from '../../domain/errors.js';
import { iso } from '../../domain/time.js';
import type { EngineContext } from '../../services/context.js';
import {
  addAsset,
  createTestResult,
  getTestResult,
  listAssets,
  listTestResults,
  openAsset,
  updateTestResult,
  type AssetUpload,
} from '../../services/test-results.js';
import { BEARER, OrganizationHeader, responses, scopeOf, type App } from '../http.js';
import { list, presentAsset, presentTestResult } from '../present.js';

const TestResultParams = Type.Object({ testResultId: Uuid });
const AssetParams = Type.Object({ testResultId: Uuid, assetId: Uuid });

const RawContent = Type.Unsafe({
  description: 'The raw content, sent with the asset\'s contentType. A single byte range (Range: bytes=a-b, a- or -n) is ' +
    'answered 206 with Content-Range; any other Range header, including an unsatisfiable one, gets the whole content.',
  content: { 'application/octet-stream': { schema: { type: 'string', format: 'binary' } } },
});

/** The form may carry a few text fields beside name; anything larger than this is not a file name. */
const FIELD_BYTES = 64 * 1024;
const FIELDS = 20;

/** A file name for Content-Disposition: an ASCII fallback, and the exact name in RFC 5987 form. */
function contentDisposition(name: string): string {
  const ascii = name.replace(/[^\x20-\x7e]|["\\]/g, '_');
  const exact = encodeURIComponent(name).replace(/['()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);
  return `attachment; filename="${ascii}"; filename*=UTF-8''${exact}`;
}

/** What the multipart parser reports about the form, in the API's terms. */
function formError(error: unknown): ServiceError {
  switch ((error as { code?: string }).code) {
    case 'FST_FILES_LIMIT':
      return invalid('invalid_upload', 'Send one file per upload, in the form field "file".');
    case 'FST_FIELDS_LIMIT':
    case 'FST_PARTS_LIMIT':
      return invalid('invalid_upload', `The form has more than ${FIELDS} fields.`);
    default:
      return invalid('invalid_upload', `The multipart form is malformed: ${(error as Error).message}.`);
  }
}

/**
 * Reads the form part by part. The file streams into the blob store's staging area as it arrives, whatever the
 * order of the parts, so that memory stays flat whatever the file's size.
 */
async function readUpload(ctx: EngineContext, request: FastifyRequest, upload: AssetUpload): Promise<void> {
  if (!request.isMultipart()) throw invalid('invalid_upload', 'Send the asset as multipart/form-data with the fields name and file.');
  const parts = request.parts();
  for (;;) {
    let next: IteratorResult<Multipart>;
    try {
      next = await parts.next();
    } catch (error) {
      throw formError(error);
    }
    if (next.done) return;
    const part = next.value;
    if (part.type === 'field') {
      if (part.fieldname === 'name' && typeof part.value === 'string') upload.name = part.value;
      continue;
    }
    if (part.fieldname !== 'file') throw invalid('invalid_upload', `Send the content in the form field "file", not "${part.fieldname}".`);
    try {
      upload.content = await ctx.blobs.stage(part.file);
    } catch (error) {
      if (error instanceof BlobSourceError) throw invalid('invalid_upload', 'The upload ended before the file was complete.');
      throw error;
    }
    upload.declaredType = part.mimetype;
    if (part.file.truncated) {
      throw invalid('asset_too_large', `The file is larger than the lab's limit of ${ctx.config.maxAssetBytes} bytes (BENCHTOP_MAX_ASSET_BYTES).`);
    }
  }
}

export function testResultRoutes(app: App, ctx: EngineContext): void {
  const tags = ['Test Results'];

  app.get('/test-results', {
    schema: { tags, operationId: 'listTestResults', summary: 'Test results, newest first, cursor paginated', description: 'The spec declares no 400 here: a malformed query is answered with its nearest declared status, and the error code invalid_request.', security: BEARER, headers: OrganizationHeader, querystring: TestResultListQuery, response: responses({ 200: List(TestResult) }, [401]) },
  }, (req) => {
    const { limit = 100, before, status, sessionId } = req.query;
    const page = listTestResults(ctx, scopeOf(ctx, req), { limit, before: before ? Date.parse(before) : undefined, status, sessionId });
    return list(page.testResults.map(presentTestResult), page.nextCursor === undefined ? undefined : iso(page.nextCursor));
  });

  app.post('/test-results', {
    schema: { tags, operationId: 'createTestResult', summary: 'Report a test run; it is queued unless status says otherwise', description: 'Any member may report, whatever the role. Unknown fields are ignored.', security: BEARER, headers: OrganizationHeader, body: CreateTestResultBody, response: responses({ 201: TestResult }, [400, 401]) },
  }, (req, reply) => reply.code(201).send(presentTestResult(createTestResult(ctx, scopeOf(ctx, req), req.body))));

  app.get('/test-results/:testResultId', {
    schema: { tags, operationId: 'getTestResult', summary: 'A test result', security: BEARER, headers: OrganizationHeader, params: TestResultParams, response: responses({ 200: TestResult }, [401, 404]) },
  }, (req) => presentTestResult(getTestResult(ctx, scopeOf(ctx, req), req.params.testResultId)));

  app.patch('/test-results/:testResultId', {
    schema: { tags, operationId: 'updateTestResult', summary: 'Change the fields present in the body, e.g. finish a queued or running run', description: 'Any member may update, whatever the role. null clears a nullable field; unknown fields are ignored.', security: BEARER, headers: OrganizationHeader, params: TestResultParams, body: UpdateTestResultBody, response: responses({ 200: TestResult }, [400, 401, 404]) },
  }, (req) => presentTestResult(updateTestResult(ctx, scopeOf(ctx, req), req.params.testResultId, req.body)));

  app.get('/test-results/:testResultId/assets', {
    schema: { tags, operationId: 'listTestResultAssets', summary: 'The test result\'s assets, in upload order', security: BEARER, headers: OrganizationHeader, params: TestResultParams, response: responses({ 200: List(Asset) }, [401, 404]) },
  }, (req) => list(listAssets(ctx, scopeOf(ctx, req), req.params.testResultId).map(presentAsset)));

  app.get('/test-results/:testResultId/assets/:assetId', {
    schema: { tags, operationId: 'downloadTestResultAsset', summary: 'An asset\'s raw content', security: BEARER, headers: OrganizationHeader, params: AssetParams, response: responses({ 200: RawContent }, [401, 404]) },
  }, async (req, reply) => {
    const { asset, content } = await openAsset(ctx, scopeOf(ctx, req), req.params.testResultId, req.params.assetId);
    const range = byteRange(req.headers.range, asset.size);
    reply
      .header('content-type', asset.contentType)
      .header('content-disposition', contentDisposition(asset.name))
      .header('accept-ranges', 'bytes')
      // Uploaded HTML or SVG must never run as a page of the lab's origin, which also serves the GUI.
      .header('x-content-type-options', 'nosniff')
      .header('content-security-policy', 'sandbox')
      .header('content-length', range ? range.end - range.start + 1 : asset.size);
    if (range) reply.code(206).header('content-range', `bytes ${range.start}-${range.end}/${asset.size}`);
    if (req.method === 'HEAD') {
      // Fastify drains a HEAD reply's stream; the headers say all there is to say, so the file is not read.
      await content.close();
      return reply.send(Readable.from([]));
    }
    return reply.send(content.createReadStream(range ?? {}));
  });

  // Only the upload reads multipart/form-data, so the parser is registered for it alone.
  app.register(async (instance) => {
    await instance.register(multipart, {
      limits: { fileSize: ctx.config.maxAssetBytes, files: 1, fields: FIELDS, fieldSize: FIELD_BYTES, parts: FIELDS + 1 },
    });
    // Any other body reaches the handler unread, which answers what to send instead.
    instance.addContentTypeParser('*', (_request, _payload, done) => done(null));
    const scoped = instance as unknown as App;
    scoped.post('/test-results/:testResultId/assets', {
      schema: { tags, operationId: 'uploadTestResultAsset', summary: 'Upload an asset: multipart/form-data with name and file', description: `The file streams to disk; at most BENCHTOP_MAX_ASSET_BYTES (${ctx.config.maxAssetBytes} bytes here). The spec declares no 400 here: a form without name or file is answered with its nearest declared status, and the error code invalid_upload (asset_too_large for an oversized file).`, security: BEARER, headers: OrganizationHeader, params: TestResultParams, body: { content: { 'multipart/form-data': { schema: AssetUploadForm } } }, response: responses({ 201: Asset }, [401, 404]) },
    }, async (req, reply) => {
      const scope = scopeOf(ctx, req);
      // Refused before a byte of the content is read.
      getTestResult(ctx, scope, req.params.testResultId);
      const upload: AssetUpload = {};
      try {
        await readUpload(ctx, req, upload);
        return reply.code(201).send(presentAsset(await addAsset(ctx, scope, req.params.testResultId, upload)));
      } catch (error) {
        // Whatever the form still holds is read and dropped, as Node does with a body nobody read, so that the
        // client can finish sending and read the error.
        req.raw.unpipe();
        req.raw.resume();
        throw error;
      } finally {
        await upload.content?.discard();
      }
    });
  });
}
