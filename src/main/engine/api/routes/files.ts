import type { FastifyRequest } from 'fastify';
import { Type } from 'typebox';
import { List, Uuid } from '../../../../shared/api/common.js';
import { CreatedFile, CreateFileBody, FileListQuery, FileUploadForm, StoredFile } from '../../../../shared/api/files.js';
import { invalid } from '../../domain/errors.js';
import { requireRole } from '../../services/auth.js';
import type { FileManager } from '../../services/files.js';
import { multipartRoutes, withMultipartUpload, type MultipartUploads } from '../multipart-upload.js';
import { BEARER, OrganizationHeader, responses, scopeOf, type App } from '../http.js';
import { page } from '../presenters/common.js';
import { presentCreated, presentFile } from '../presenters/files.js';
import { API_PREFIX } from '../prefix.js';

const FileParams = Type.Object({ fileId: Uuid });
const UploadQuery = Type.Object({
  expires: Type.Integer({ minimum: 0 }),
  nonce: Type.String({ minLength: 1, maxLength: 100 }),
  signature: Type.String({ minLength: 1, maxLength: 100 }),
});

/** The API's base URL as the client reached it, so that a LAN client gets an upload URL it can reach. */
const apiBaseOf = (req: FastifyRequest) => `${req.protocol}://${req.host}${API_PREFIX}`;

/** Whatever the request still holds is read and dropped, so that the client can finish sending and read the error. */
export function drain(req: FastifyRequest): void {
  req.raw.unpipe();
  req.raw.resume();
}

export function fileRoutes(app: App, files: FileManager, uploads: MultipartUploads): void {
  const tags = ['Files'];

  app.get('/files', {
    schema: { tags, operationId: 'listFiles', summary: 'Stored files, newest first, cursor paginated (expired files are gone)', security: BEARER, headers: OrganizationHeader, querystring: FileListQuery, response: responses({ 200: List(StoredFile) }, [400, 401, 403]) },
  }, (req) => {
    const { limit = 100, before } = req.query;
    const result = files.list(scopeOf(req), { limit, before: before ? Date.parse(before) : undefined });
    return page(result.files.map(presentFile), result.nextCursor);
  });

  app.post('/files', {
    schema: { tags, operationId: 'createFile', summary: 'Declare a file by name, size and SHA-256, and get a signed URL to PUT its bytes to', description: 'The same SHA-256 in the same organization is the same file: a ready or processing one is answered 200 without an upload; one still waiting for its bytes, or failed, gets a fresh upload URL (200). A new file is 201 with status pendingUpload. The URL is on this engine, single-use, and expires after an hour. Then call POST /files/{id}/complete.', security: BEARER, headers: OrganizationHeader, body: CreateFileBody, response: responses({ 200: CreatedFile, 201: CreatedFile }, [400, 401, 403]) },
  }, (req, reply) => {
    const { file, upload, created } = files.create(scopeOf(req), req.body, apiBaseOf(req));
    return reply.code(created ? 201 : 200).send(presentCreated(file, upload));
  });

  app.get('/files/:fileId', {
    schema: { tags, operationId: 'getFile', summary: 'A stored file, with its app metadata once ready', security: BEARER, headers: OrganizationHeader, params: FileParams, response: responses({ 200: StoredFile }, [401, 403, 404]) },
  }, (req) => presentFile(files.get(scopeOf(req), req.params.fileId)));

  app.delete('/files/:fileId', {
    schema: { tags, operationId: 'deleteFile', summary: 'Delete a stored file; its bytes go with the next sweep unless something else uses them', security: BEARER, headers: OrganizationHeader, params: FileParams, response: responses({ 204: Type.Null() }, [401, 403, 404]) },
  }, (req, reply) => {
    files.delete(scopeOf(req), req.params.fileId);
    return reply.code(204).send();
  });

  app.post('/files/:fileId/complete', {
    schema: { tags, operationId: 'completeFile', summary: 'Check the uploaded bytes against the declared size and SHA-256: processing, then ready, or failed with a failureReason', description: 'Idempotent: a file past pendingUpload is answered as it is. 409 file_not_uploaded while no bytes have arrived.', security: BEARER, headers: OrganizationHeader, params: FileParams, response: responses({ 200: StoredFile }, [401, 403, 404, 409]) },
  }, (req) => presentFile(files.complete(scopeOf(req), req.params.fileId)));

  // The two uploads read their bodies as streams, so no parser may buffer them: each gets a scope of its own.
  app.register(async (instance) => {
    instance.removeAllContentTypeParsers();
    instance.addContentTypeParser('*', (_request, _payload, done) => done(null));
    const scoped = instance as unknown as App;
    scoped.put('/files/:fileId/content', {
      config: { public: true },
      schema: { tags, operationId: 'uploadFileContent', summary: 'The signed upload URL: PUT the raw bytes', description: 'No bearer: the signed URL is the credential. 403 upload_url_invalid (altered or not this lab\'s), upload_url_expired, or upload_url_used (each URL takes one upload); 400 file_too_large past the declared filesize, upload_incomplete when the body breaks off.', params: FileParams, querystring: UploadQuery, body: { content: { 'application/octet-stream': { schema: { type: 'string', format: 'binary' } } } }, response: responses({ 200: StoredFile }, [400, 403, 404]) },
    }, async (req, reply) => {
      try {
        return presentFile(await uploads.limits.run(req, reply, () => files.receive(req.params.fileId, req.query, req.raw)));
      } catch (error) {
        drain(req);
        throw error;
      }
    });
  });

  multipartRoutes(app, uploads, (scoped) => {
    scoped.post('/files/upload', {
      schema: { tags, operationId: 'uploadFile', summary: 'Upload an app directly: multipart/form-data with the field file', description: 'The part\'s filename names the file. The content\'s SHA-256 decides which file it is: the same bytes answer the existing file (200), new bytes a new file (201) that is processing until its app has been read.', security: BEARER, headers: OrganizationHeader, body: { content: { 'multipart/form-data': { schema: FileUploadForm } } }, response: responses({ 200: StoredFile, 201: StoredFile }, [400, 401, 403]) },
    }, async (req, reply) => {
      const scope = scopeOf(req);
      // Refused before a byte of the content is read.
      requireRole(scope.role, 'readwrite');
      return withMultipartUpload(uploads, req, reply, { expected: 'the app in the form field "file"', tooLargeCode: 'file_too_large' }, async ({ content, filename }) => {
        if (!content) throw invalid('invalid_upload', 'The upload has no file part: send the app as the form field "file".');
        const name = filename?.trim() ?? '';
        if (name === '' || name.length > 255) throw invalid('invalid_upload', 'The file part needs a filename of 1 to 255 characters.');
        const { file, created } = await files.upload(scope, name, content);
        return reply.code(created ? 201 : 200).send(presentFile(file));
      });
    });
  });
}
