/** The top-level boxes of an ISO base media file, and the sample count of its first track: a reader of our own, apart from ffprobe. */
export function mp4Boxes(data: Buffer): { types: string[]; samples: number; firstSample: Buffer } {
  const children = (buf: Buffer, start: number, end: number) => {
    const out: Array<{ type: string; start: number; end: number }> = [];
    for (let at = start; at + 8 <= end;) {
      const size = buf.readUInt32BE(at);
      if (size < 8 || at + size > end) throw new Error(`a box at ${at} runs past its parent`);
      out.push({ type: buf.toString('latin1', at + 4, at + 8), start: at + 8, end: at + size });
      at += size;
    }
    return out;
  };
  const find = (path: string[], start = 0, end = data.length): { start: number; end: number } => {
    const [head, ...rest] = path;
    const box = children(data, start, end).find((b) => b.type === head);
    if (!box) throw new Error(`no ${head} box`);
    return rest.length ? find(rest, box.start, box.end) : box;
  };
  const types = children(data, 0, data.length).map((b) => b.type);
  const stbl = ['moov', 'trak', 'mdia', 'minf', 'stbl'];
  const stsz = find([...stbl, 'stsz']);
  const samples = data.readUInt32BE(stsz.start + 8);
  const firstSize = data.readUInt32BE(stsz.start + 12);
  const offset = data.readUInt32BE(find([...stbl, 'stco']).start + 8);
  return { types, samples, firstSample: data.subarray(offset, offset + firstSize) };
}
