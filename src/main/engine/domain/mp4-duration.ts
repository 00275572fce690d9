/**
 * An MP4's duration in seconds, from its movie header (`moov` > `mvhd`: timescale and duration, version 0 or 1), or
 * undefined when the file has none: what the lab reads of a run's video to place it on the run's clock.
 */
export function mp4Seconds(mp4: Buffer): number | undefined {
  const moov = child(mp4, 0, mp4.length, 'moov');
  const mvhd = moov && child(mp4, moov.start, moov.end, 'mvhd');
  if (!mvhd) return undefined;
  const version = mp4[mvhd.start];
  const at = mvhd.start + 4 + (version === 1 ? 16 : 8);
  if (at + (version === 1 ? 12 : 8) > mvhd.end) return undefined;
  const timescale = mp4.readUInt32BE(at);
  const duration = version === 1 ? Number(mp4.readBigUInt64BE(at + 4)) : mp4.readUInt32BE(at + 4);
  return timescale > 0 ? duration / timescale : undefined;
}

/**
 * The picture size of an MP4's video track (the first `moov` > `trak` > `tkhd` with a width and height), or undefined
 * when it has none: a phone's recorder starts each file at the screen's size then, so a rotation changes it.
 */
export function mp4VideoSize(mp4: Buffer): { width: number; height: number } | undefined {
  const moov = child(mp4, 0, mp4.length, 'moov');
  if (!moov) return undefined;
  for (let at = moov.start; at + 8 <= moov.end; ) {
    const trak = child(mp4, at, moov.end, 'trak');
    if (!trak) return undefined;
    const tkhd = child(mp4, trak.start, trak.end, 'tkhd');
    // tkhd ends with the width and height, each 16.16 fixed point.
    if (tkhd && tkhd.end - tkhd.start >= 84) {
      const width = mp4.readUInt32BE(tkhd.end - 8) >>> 16;
      const height = mp4.readUInt32BE(tkhd.end - 4) >>> 16;
      if (width > 0 && height > 0) return { width, height };
    }
    at = trak.end;
  }
  return undefined;
}

/** The first box of that type among the boxes from `start` to `end`: where its content starts and ends. */
function child(mp4: Buffer, start: number, end: number, type: string): { start: number; end: number } | undefined {
  for (let at = start; at + 8 <= end; ) {
    let size = mp4.readUInt32BE(at);
    let header = 8;
    if (size === 1 && at + 16 <= end) {
      size = Number(mp4.readBigUInt64BE(at + 8));
      header = 16;
    } else if (size === 0) size = end - at;
    if (size < header || at + size > end) return undefined;
    if (mp4.toString('latin1', at + 4, at + 8) === type) return { start: at + header, end: at + size };
    at += size;
  }
  return undefined;
}
