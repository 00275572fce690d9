import { posix } from 'node:path';
import { APP_DOCUMENTS_ROOT, PHONE_FILE_ROOTS } from '../../../shared/api/devices.js';
import { invalid } from './errors.js';

/**
 * `path` absolute and normalized (no `..` climbing out), and under one of `roots`; anything else is refused with
 * `refusal` before the phone is asked.
 */
function pathUnder(path: string, roots: readonly string[], refusal: string): string {
  const normalized = posix.normalize(path).replace(/(.)\/+$/, '$1');
  const allowed = path.startsWith('/') && !path.includes('\0') && roots.some((root) => normalized === root || normalized.startsWith(`${root}/`));
  if (!allowed) throw invalid('path_not_allowed', refusal);
  return normalized;
}

/** A path a member may browse, read or write on an Android phone: under one of the shared folders. */
export function phonePath(path: string): string {
  return pathUnder(path, PHONE_FILE_ROOTS, `Files can be read and written under ${PHONE_FILE_ROOTS.join(' and ')} only.`);
}

/**
 * A path in an iPhone app's container that a member may reach: under /Documents (what VendDocuments shares), so that
 * `..` cannot climb to the app's Library or out of the container.
 */
export function documentsPath(path: string): string {
  return pathUnder(path, [APP_DOCUMENTS_ROOT], `An app's files can be read and written under ${APP_DOCUMENTS_ROOT} only.`);
}
