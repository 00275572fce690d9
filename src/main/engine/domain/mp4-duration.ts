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
