/**
 * The top-level boxes of an ISO base media file, its first track's sample entry (`avc1` for H.264) and sample count,
 * and the NAL unit types of its first sample: a reader of our own, apart from ffprobe.
 */
export function mp4Boxes(data: Buffer): { types: string[]; sampleEntry: string; samples: number; firstSample: Buffer; firstSampleNalTypes: number[] } {
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
  // stsd: version and flags, entry_count, then the first entry's size and type.
  const sampleEntry = data.toString('latin1', find([...stbl, 'stsd']).start + 12, find([...stbl, 'stsd']).start + 16);
  const stsz = find([...stbl, 'stsz']);
  const samples = data.readUInt32BE(stsz.start + 8);
  const firstSize = data.readUInt32BE(stsz.start + 12);
  const offset = data.readUInt32BE(find([...stbl, 'stco']).start + 8);
  const firstSample = data.subarray(offset, offset + firstSize);
  // In an MP4, H.264 NAL units are each preceded by a 4-byte length (avcC's usual lengthSizeMinusOne of 3).
  const firstSampleNalTypes: number[] = [];
  if (sampleEntry === 'avc1') {
    for (let at = 0; at + 5 <= firstSample.length; at += 4 + firstSample.readUInt32BE(at)) firstSampleNalTypes.push(firstSample[at + 4]! & 0x1f);
  }
  return { types, sampleEntry, samples, firstSample, firstSampleNalTypes };
}
