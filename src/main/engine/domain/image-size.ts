/** Image sizes read from the encoded bytes' headers: a frame's size is known without decoding it. */

/** Width and height from the IHDR chunk, which every PNG has first. */
export function pngSize(png: Buffer): { width: number; height: number } {
  if (png.length < 24 || png.toString('latin1', 12, 16) !== 'IHDR') throw new Error('screencap did not return a PNG');
  return { width: png.readUInt32BE(16), height: png.readUInt32BE(20) };
}

/**
 * Width and height from a JPEG's first SOF marker: what the phone actually encoded (minicap's rotation included,
 * WDA's scaling included); undefined for bytes that are not a JPEG.
 */
export function jpegSize(jpeg: Buffer): { width: number; height: number } | undefined {
  let i = 2;
  while (i + 9 < jpeg.length) {
    if (jpeg[i] !== 0xff) return undefined;
    const marker = jpeg[i + 1]!;
    const length = jpeg.readUInt16BE(i + 2);
    // SOF0..SOF15 carry the frame size, except DHT (C4), JPG (C8) and DAC (CC).
    if (marker >= 0xc0 && marker <= 0xcf && marker !== 0xc4 && marker !== 0xc8 && marker !== 0xcc) {
      return { height: jpeg.readUInt16BE(i + 5), width: jpeg.readUInt16BE(i + 7) };
    }
    i += 2 + length;
  }
  return undefined;
}
