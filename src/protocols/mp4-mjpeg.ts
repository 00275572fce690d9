/**
 * A minimal ISO base media file (MP4) of JPEG frames: ftyp, mdat, then moov with one video track whose sample entry
 * is `jpeg` (Motion JPEG, which ffmpeg's mov demuxer and every box parser read). Written once for two writers: an
 * iPhone's recording, made of WebDriverAgent's MJPEG frames as they came, and the simulated Android phone's
 * screenrecord (a real phone's writes H.264), which records the frames it already encodes for minicap.
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
const TIMESCALE = 1000;

export interface Mp4Frame {
  jpeg: Buffer;
  /** How long the frame shows, in milliseconds. */
  durationMs: number;
}

export function mp4OfJpegs(frames: readonly Mp4Frame[], width: number, height: number): Buffer {
  if (frames.length === 0) throw new RangeError('an MP4 needs at least one frame');
  const durations = frames.map((f) => Math.max(1, Math.round(f.durationMs)));
  const duration = durations.reduce((a, b) => a + b, 0);
  const ftyp = box('ftyp', Buffer.from('isom', 'latin1'), u32(0x200), Buffer.from('isomiso2mp41', 'latin1'));
  const mdat = box('mdat', ...frames.map((f) => f.jpeg));
  // The one chunk's data starts right after mdat's 8-byte header.
  const chunkOffset = ftyp.length + 8;

  const mvhd = fullBox('mvhd', 0, 0, u32(0, 0, TIMESCALE, duration, 0x00010000), u16(0x0100, 0), u32(0, 0), MATRIX, u32(0, 0, 0, 0, 0, 0), u32(2));
  const tkhd = fullBox('tkhd', 0, 3, u32(0, 0, 1, 0, duration, 0, 0), u16(0, 0, 0, 0), MATRIX, u32(width << 16, height << 16));
  // Language "und", packed as three 5-bit letters.
  const mdhd = fullBox('mdhd', 0, 0, u32(0, 0, TIMESCALE, duration), u16(0x55c4, 0));
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
  const stsd = fullBox('stsd', 0, 0, u32(1), sampleEntry);
  // Runs of equal durations, as stts stores them.
  const runs: Array<[count: number, delta: number]> = [];
  for (const d of durations) {
    const last = runs.at(-1);
    if (last && last[1] === d) last[0]++;
    else runs.push([1, d]);
  }
  const stts = fullBox('stts', 0, 0, u32(runs.length, ...runs.flat()));
  const stsc = fullBox('stsc', 0, 0, u32(1, 1, frames.length, 1));
  const stsz = fullBox('stsz', 0, 0, u32(0, frames.length, ...frames.map((f) => f.jpeg.length)));
  const stco = fullBox('stco', 0, 0, u32(1, chunkOffset));
  const stbl = box('stbl', stsd, stts, stsc, stsz, stco);
  const minf = box('minf', vmhd, dinf, stbl);
  const trak = box('trak', tkhd, box('mdia', mdhd, hdlr, minf));
  const moov = box('moov', mvhd, trak);
  return Buffer.concat([ftyp, mdat, moov]);
}
