/** An inclusive byte range of a representation, as in Content-Range. */
export interface ByteRange {
  start: number;
  end: number;
}

const SINGLE_RANGE = /^bytes\s*=\s*(\d*)\s*-\s*(\d*)\s*$/i;

/**
 * The one byte range a Range header selects from content of `size` bytes, or undefined to send it all.
 *
 * One range, `bytes=a-b`, `bytes=a-` or `bytes=-n`, is served. Anything else (several ranges, another unit, a
 * malformed or unsatisfiable range) selects the whole content: RFC 9110 lets a server ignore Range, and the spec
 * declares no 416 for a download, so a client always gets either exactly what it asked for or everything.
 */
export function byteRange(header: string | undefined, size: number): ByteRange | undefined {
  const match = header ? SINGLE_RANGE.exec(header) : null;
  if (!match || size === 0) return undefined;
  const [, first, last] = match as unknown as [string, string, string];
  if (first === '') {
    // bytes=-n: the last n bytes, or all of them when n is larger.
    const suffix = last === '' ? 0 : Number(last);
    return suffix > 0 ? { start: Math.max(0, size - suffix), end: size - 1 } : undefined;
  }
  const start = Number(first);
  const end = last === '' ? size - 1 : Math.min(Number(last), size - 1);
  return start < size && start <= end ? { start, end } : undefined;
}
