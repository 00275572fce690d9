const GENERIC = 'application/octet-stream';

/** The types of the files test runs leave behind: traces, reports, screenshots, videos, logs, app binaries. */
const BY_EXTENSION = new Map(Object.entries({
  apk: 'application/vnd.android.package-archive',
  csv: 'text/csv',
  gif: 'image/gif',
  gz: 'application/gzip',
  har: 'application/json',
  htm: 'text/html',
  html: 'text/html',
  jpeg: 'image/jpeg',
  jpg: 'image/jpeg',
  json: 'application/json',
  log: 'text/plain',
  md: 'text/markdown',
  mov: 'video/quicktime',
  mp4: 'video/mp4',
  pdf: 'application/pdf',
  png: 'image/png',
  svg: 'image/svg+xml',
  tar: 'application/x-tar',
  txt: 'text/plain',
  webm: 'video/webm',
  webp: 'image/webp',
  xml: 'application/xml',
  zip: 'application/zip',
}));

/** type/subtype with optional parameters, printable ASCII only: safe to send back as a Content-Type header. */
const MEDIA_TYPE = /^[a-z0-9][a-z0-9!#$&^_.+-]*\/[a-z0-9][a-z0-9!#$&^_.+-]*(\s*;[\x20-\x7e]*)?$/i;

/**
 * Types that say little about a file: most clients send application/octet-stream for any file, and the form
 * parser reports a part that declared no type as text/plain.
 */
const WEAK = new Set([GENERIC, 'text/plain']);

/**
 * The content type of an uploaded file: the one its form part declared, unless that is missing, malformed or
 * weak; then a guess from the file name's extension; else the weak declared type; else application/octet-stream.
 */
export function contentTypeOf(declared: string | undefined, name: string): string {
  const trimmed = declared?.trim();
  const type = trimmed && trimmed.length <= 255 && MEDIA_TYPE.test(trimmed) ? trimmed : undefined;
  if (type && !WEAK.has(type.split(';')[0]!.trim().toLowerCase())) return type;
  const dot = name.lastIndexOf('.');
  return (dot >= 0 && BY_EXTENSION.get(name.slice(dot + 1).toLowerCase())) || type || GENERIC;
}
