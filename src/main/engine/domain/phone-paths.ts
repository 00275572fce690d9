import { posix } from 'node:path';
import { APP_DOCUMENTS_ROOT, PHONE_FILE_ROOTS } from '../../../shared/api/devices.js';
import { invalid } from './errors.js';

/**
 * A path a member may browse, read or write on a phone: absolute, normalized (no `..` climbing out), and under one of
 * the shared folders. Anything else is refused before the phone is asked.
 */
export function phonePath(path: string): string {
  const normalized = posix.normalize(path).replace(/(.)\/+$/, '$1');
  const allowed = path.startsWith('/') && !path.includes('\0') && PHONE_FILE_ROOTS.some((root) => normalized === root || normalized.startsWith(`${root}/`));
  if (!allowed) throw invalid('path_not_allowed', `Files can be read and written under ${PHONE_FILE_ROOTS.join(' and ')} only.`);
  return normalized;
}

/**
 * A path in an iPhone app's container that a member may reach: under /Documents (what VendDocuments shares), absolute
 * and normalized, so that `..` cannot climb to the app's Library or out of the container.
 */
export function documentsPath(path: string): string {
  const normalized = posix.normalize(path).replace(/(.)\/+$/, '$1');
  const allowed = path.startsWith('/') && !path.includes('\0') && (normalized === APP_DOCUMENTS_ROOT || normalized.startsWith(`${APP_DOCUMENTS_ROOT}/`));
  if (!allowed) throw invalid('path_not_allowed', `An app's files can be read and written under ${APP_DOCUMENTS_ROOT} only.`);
  return normalized;
}
