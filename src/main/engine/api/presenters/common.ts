import { iso } from '../../domain/time.js';

/** The list wrapper every list operation answers with. */

export const list = <T>(data: T[], nextCursor?: string) => ({ object: 'list' as const, data, ...(nextCursor ? { nextCursor } : {}) });

export const page = <T>(data: T[], nextCursor: number | undefined) => list(data, nextCursor === undefined ? undefined : iso(nextCursor));
