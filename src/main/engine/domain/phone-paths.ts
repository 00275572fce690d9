import { posix } from 'node:path';
import { PHONE_FILE_ROOTS } from '../../../shared/api/devices.js';
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
