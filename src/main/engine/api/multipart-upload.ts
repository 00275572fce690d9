import multipart, { type Multipart } from '@fastify/multipart';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { BlobSourceError, type BlobStore, type StagedBlob } from '../blobs/blob-store.js';
import { invalid, type ServiceError } from '../domain/errors.js';
import type { App } from './http.js';
import type { UploadLimits } from './upload-limits.js';

/** The form may carry a few text fields beside the file; anything larger than this is not a name. */
const FIELD_BYTES = 64 * 1024;
const FIELDS = 20;

/** Where uploaded parts are staged, how large one may be, and the limits on stalled and concurrent uploads. */
export interface MultipartUploads {
  blobs: Pick<BlobStore, 'stage'>;
  maxBytes: number;
  limits: UploadLimits;
}

/** A multipart form as read: its text fields, and its one file part staged in the blob store. */
export interface MultipartUpload {
  fields: Record<string, string>;
  content?: StagedBlob;
  /** The file part's own filename and content type. */
  filename?: string;
  contentType?: string;
}

/**
 * Registers routes that read multipart/form-data, in a scope of their own so that no other route parses it. Any
 * other body reaches the handler unread, which answers what to send instead.
 */
export function multipartRoutes(app: App, uploads: MultipartUploads, register: (scoped: App) => void): void {
  app.register(async (instance) => {
    await instance.register(multipart, {
      limits: { fileSize: uploads.maxBytes, files: 1, fields: FIELDS, fieldSize: FIELD_BYTES, parts: FIELDS + 1 },
    });
    instance.addContentTypeParser('*', (_request, _payload, done) => done(null));
    register(instance as unknown as App);
  });
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
 * Reads the form part by part, streaming the file into the blob store's staging area as it arrives, whatever the
 * order of the parts, so that memory stays flat whatever the file's size; then hands it to `work`. The staged
 * content is discarded afterwards (work files what it keeps). On an error, whatever the request still holds is read
 * and dropped, as Node does with a body nobody read, so that the client can finish sending and read the error.
 */
export async function withMultipartUpload<T>(
  uploads: MultipartUploads,
  request: FastifyRequest,
  reply: FastifyReply,
  what: { expected: string; tooLargeCode: string },
  work: (upload: MultipartUpload) => Promise<T>,
): Promise<T> {
  return uploads.limits.run(request, reply, () => readMultipartUpload(uploads, request, what, work));
}

async function readMultipartUpload<T>(
  uploads: MultipartUploads,
  request: FastifyRequest,
  what: { expected: string; tooLargeCode: string },
  work: (upload: MultipartUpload) => Promise<T>,
): Promise<T> {
  const upload: MultipartUpload = { fields: {} };
  try {
    if (!request.isMultipart()) throw invalid('invalid_upload', `Send ${what.expected} as multipart/form-data.`);
    const parts = request.parts();
    for (;;) {
      let next: IteratorResult<Multipart>;
      try {
        next = await parts.next();
      } catch (error) {
        throw formError(error);
      }
      if (next.done) break;
      const part = next.value;
      if (part.type === 'field') {
        if (typeof part.value === 'string') upload.fields[part.fieldname] = part.value;
        continue;
      }
      if (part.fieldname !== 'file') throw invalid('invalid_upload', `Send the content in the form field "file", not "${part.fieldname}".`);
      try {
        upload.content = await uploads.blobs.stage(part.file);
      } catch (error) {
        if (error instanceof BlobSourceError) throw invalid('invalid_upload', 'The upload ended before the file was complete.');
        throw error;
      }
      upload.filename = part.filename;
      upload.contentType = part.mimetype;
      if (part.file.truncated) {
        throw invalid(what.tooLargeCode, `The file is larger than the lab's limit of ${uploads.maxBytes} bytes (BENCHTOP_MAX_ASSET_BYTES).`);
      }
    }
    return await work(upload);
  } catch (error) {
    request.raw.unpipe();
    request.raw.resume();
    throw error;
  } finally {
    await upload.content?.discard();
  }
}
