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
import { byteRange } from '../../domain/byte-range.js';
import type { AssetUpload, TestResults } from '../../services/test-results.js';
import { multipartRoutes, withMultipartUpload, type MultipartUploads } from '../multipart-upload.js';
import { BEARER, OrganizationHeader, responses, scopeOf, type App } from '../http.js';
import { list, page } from '../presenters/common.js';
import { presentAsset, presentTestResult } from '../presenters/test-results.js';

const TestResultParams = Type.Object({ testResultId: Uuid });
const AssetParams = Type.Object({ testResultId: Uuid, assetId: Uuid });

/** Any media type: each asset is served with the contentType it was uploaded with (see Asset.contentType). */
const RawContent = Type.Unsafe({
  description: 'The raw content, sent with the asset\'s contentType. A single byte range (Range: bytes=a-b, a- or -n) is ' +
    'answered 206 with Content-Range; any other Range header, including an unsatisfiable one, gets the whole content.',
  content: { '*/*': { schema: { type: 'string', format: 'binary' } } },
});

/** What a single satisfiable byte range gets: only a client that sends Range ever sees a 206. */
const PartialContent = Type.Unsafe({
  description: 'The requested byte range of the content, sent with the asset\'s contentType and Content-Range: bytes a-b/size.',
  content: { '*/*': { schema: { type: 'string', format: 'binary' } } },
});

/** A file name for Content-Disposition: an ASCII fallback, and the exact name in RFC 5987 form. */
function contentDisposition(name: string): string {
  const ascii = name.replace(/[^\x20-\x7e]|["\\]/g, '_');
  const exact = encodeURIComponent(name).replace(/['()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);
  return `attachment; filename="${ascii}"; filename*=UTF-8''${exact}`;
}

export function testResultRoutes(app: App, testResults: TestResults, uploads: MultipartUploads): void {
  const tags = ['Test Results'];

  app.get('/test-results', {
    schema: { tags, operationId: 'listTestResults', summary: 'Test results, newest first, cursor paginated', description: 'The spec declares no 400 here: a malformed query is answered with its nearest declared status, and the error code invalid_request.', security: BEARER, headers: OrganizationHeader, querystring: TestResultListQuery, response: responses({ 200: List(TestResult) }, [401]) },
  }, (req) => {
    const { limit = 100, before, status, sessionId, tag } = req.query;
    const result = testResults.listTestResults(scopeOf(req), { limit, before: before ? Date.parse(before) : undefined, status, sessionId, tag });
    return page(result.testResults.map(presentTestResult), result.nextCursor);
  });

  app.post('/test-results', {
    schema: { tags, operationId: 'createTestResult', summary: 'Report a test run; it is queued unless status says otherwise', description: 'Any member may report, whatever the role. Unknown fields are ignored.', security: BEARER, headers: OrganizationHeader, body: CreateTestResultBody, response: responses({ 201: TestResult }, [400, 401]) },
  }, (req, reply) => reply.code(201).send(presentTestResult(testResults.createTestResult(scopeOf(req), req.body))));

  app.get('/test-results/:testResultId', {
    schema: { tags, operationId: 'getTestResult', summary: 'A test result', security: BEARER, headers: OrganizationHeader, params: TestResultParams, response: responses({ 200: TestResult }, [401, 404]) },
  }, (req) => presentTestResult(testResults.getTestResult(scopeOf(req), req.params.testResultId)));

  app.patch('/test-results/:testResultId', {
    schema: { tags, operationId: 'updateTestResult', summary: 'Change the fields present in the body, e.g. finish a queued or running run', description: 'Any member may update, whatever the role. null clears a nullable field; unknown fields are ignored.', security: BEARER, headers: OrganizationHeader, params: TestResultParams, body: UpdateTestResultBody, response: responses({ 200: TestResult }, [400, 401, 404]) },
  }, (req) => presentTestResult(testResults.updateTestResult(scopeOf(req), req.params.testResultId, req.body)));

  app.get('/test-results/:testResultId/assets', {
    schema: { tags, operationId: 'listTestResultAssets', summary: 'The test result\'s assets, in upload order', security: BEARER, headers: OrganizationHeader, params: TestResultParams, response: responses({ 200: List(Asset) }, [401, 404]) },
  }, (req) => list(testResults.listAssets(scopeOf(req), req.params.testResultId).map(presentAsset)));

  app.get('/test-results/:testResultId/assets/:assetId', {
    schema: { tags, operationId: 'downloadTestResultAsset', summary: 'An asset\'s raw content', security: BEARER, headers: OrganizationHeader, params: AssetParams, response: responses({ 200: RawContent, 206: PartialContent }, [401, 404]) },
  }, async (req, reply) => {
    const { asset, content } = await testResults.openAsset(scopeOf(req), req.params.testResultId, req.params.assetId);
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
  multipartRoutes(app, uploads, (scoped) => {
    scoped.post('/test-results/:testResultId/assets', {
      schema: { tags, operationId: 'uploadTestResultAsset', summary: 'Upload an asset: multipart/form-data with name and file', description: `The file streams to disk; at most BENCHTOP_MAX_ASSET_BYTES (${uploads.maxBytes} bytes here). The spec declares no 400 here: a form without name or file is answered with its nearest declared status, and the error code invalid_upload (asset_too_large for an oversized file).`, security: BEARER, headers: OrganizationHeader, params: TestResultParams, body: { content: { 'multipart/form-data': { schema: AssetUploadForm } } }, response: responses({ 201: Asset }, [401, 404]) },
    }, async (req, reply) => {
      const scope = scopeOf(req);
      // Refused before a byte of the content is read.
      testResults.getTestResult(scope, req.params.testResultId);
      return withMultipartUpload(uploads, req, reply, { expected: 'the asset with the fields name and file', tooLargeCode: 'asset_too_large' }, async (form) => {
        const upload: AssetUpload = { name: form.fields.name, content: form.content, declaredType: form.contentType };
        return reply.code(201).send(presentAsset(await testResults.addAsset(scope, req.params.testResultId, upload)));
      });
    });
  });
}
