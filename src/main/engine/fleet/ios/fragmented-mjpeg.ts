/**
 * JPEG frames as a fragmented MP4 (ISO BMFF with movie fragments): an init segment, then one fragment per frame
 * whose tfdt says when the frame came. It is how the iPhone recorder hands WebDriverAgent's frames to ffmpeg: a
 * stream ffmpeg reads as it arrives, with each frame's own time, where raw JPEGs on a pipe would be timed by when
 * ffmpeg got round to reading them (and its JPEG parser only ends a frame when the next one begins).
 */

const box = (type: string, ...parts: Buffer[]): Buffer => {
  const body = Buffer.concat(parts);
  const header = Buffer.alloc(8);
  header.writeUInt32BE(8 + body.length, 0);
  header.write(type, 4, 'latin1');
  return Buffer.concat([header, body]);
};
/** A FullBox: version and flags before the fields. */
const fullBox = (type: string, version: number, flags: number, ...parts: Buffer[]) => {
  const vf = Buffer.alloc(4);
  vf.writeUInt32BE(((version & 0xff) << 24) | (flags & 0xffffff), 0);
  return box(type, vf, ...parts);
};
const u32 = (...values: number[]) => {
  const b = Buffer.alloc(4 * values.length);
  values.forEach((v, i) => b.writeUInt32BE(v >>> 0, i * 4));
  return b;
};
const u16 = (...values: number[]) => {
  const b = Buffer.alloc(2 * values.length);
  values.forEach((v, i) => b.writeUInt16BE(v & 0xffff, i * 2));
  return b;
};
/** The identity transformation matrix of mvhd and tkhd. */
const MATRIX = u32(0x00010000, 0, 0, 0, 0x00010000, 0, 0, 0, 0x40000000);
/** Milliseconds. */
export const TIMESCALE = 1000;

/** ftyp and a moov whose one video track is Motion JPEG (`jpeg`) and whose samples all come in fragments. */
export function mjpegInitSegment(width: number, height: number): Buffer {
  const ftyp = box('ftyp', Buffer.from('iso5', 'latin1'), u32(0x200), Buffer.from('iso5iso6mp41', 'latin1'));
  const mvhd = fullBox('mvhd', 0, 0, u32(0, 0, TIMESCALE, 0, 0x00010000), u16(0x0100, 0), u32(0, 0), MATRIX, u32(0, 0, 0, 0, 0, 0), u32(2));
  const tkhd = fullBox('tkhd', 0, 3, u32(0, 0, 1, 0, 0, 0, 0), u16(0, 0, 0, 0), MATRIX, u32(width << 16, height << 16));
  // Language "und", packed as three 5-bit letters.
  const mdhd = fullBox('mdhd', 0, 0, u32(0, 0, TIMESCALE, 0), u16(0x55c4, 0));
  const hdlr = fullBox('hdlr', 0, 0, u32(0), Buffer.from('vide', 'latin1'), u32(0, 0, 0), Buffer.from('VideoHandler\0', 'latin1'));
  const vmhd = fullBox('vmhd', 0, 1, u16(0, 0, 0, 0));
  const dinf = box('dinf', fullBox('dref', 0, 0, u32(1), fullBox('url ', 0, 1)));
  const compressor = Buffer.alloc(32);
  compressor.writeUInt8(11, 0);
  compressor.write('Photo - JPEG', 1, 'latin1');
  const sampleEntry = box(
    'jpeg',
    Buffer.alloc(6), u16(1), // reserved, data_reference_index
    u16(0, 0), u32(0, 0, 0), // pre_defined, reserved, pre_defined
    u16(width, height), u32(0x00480000, 0x00480000, 0), u16(1), // size, 72 dpi, reserved, frame_count
    compressor, u16(0x0018, 0xffff), // depth 24, pre_defined -1
  );
  const empty = (type: string) => fullBox(type, 0, 0, u32(0));
  const stbl = box('stbl', fullBox('stsd', 0, 0, u32(1), sampleEntry), empty('stts'), empty('stsc'), fullBox('stsz', 0, 0, u32(0, 0)), empty('stco'));
  const trak = box('trak', tkhd, box('mdia', mdhd, hdlr, box('minf', vmhd, dinf, stbl)));
  // trex: track 1, sample description 1, and no default duration, size or flags.
  const mvex = box('mvex', fullBox('trex', 0, 0, u32(1, 1, 0, 0, 0)));
  return Buffer.concat([ftyp, box('moov', mvhd, trak, mvex)]);
}

/** One frame as moof + mdat: `atMs` is when it came, `durationMs` how long it shows until the next is known. */
export function mjpegFragment(sequence: number, atMs: number, durationMs: number, jpeg: Buffer): Buffer {
  const mfhd = fullBox('mfhd', 0, 0, u32(sequence));
  // default-base-is-moof: data offsets count from this moof's first byte.
  const tfhd = fullBox('tfhd', 0, 0x020000, u32(1));
  const time = Buffer.alloc(8);
  time.writeBigUInt64BE(BigInt(Math.max(0, Math.round(atMs))));
  const tfdt = fullBox('tfdt', 1, 0, time);
  // trun with data-offset, sample-duration, sample-size and sample-flags (a sync sample: every JPEG stands alone).
  const trunFields = (dataOffset: number) => u32(1, dataOffset, Math.max(1, Math.round(durationMs)), jpeg.length, 0x02000000);
  const moofSize = (trun: Buffer) => box('moof', mfhd, box('traf', tfhd, tfdt, trun)).length;
  const probe = fullBox('trun', 0, 0x000701, trunFields(0));
  const trun = fullBox('trun', 0, 0x000701, trunFields(moofSize(probe) + 8));
  return Buffer.concat([box('moof', mfhd, box('traf', tfhd, tfdt, trun)), box('mdat', jpeg)]);
}
