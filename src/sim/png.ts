import { crc32, deflateSync } from 'node:zlib';

/** RGBA pixels, as the simulators' canvases hold them. */
export interface Pixels {
  width: number;
  height: number;
  data: Buffer;
}

/** A rectangle of the picture, for an element's screenshot. */
export interface Region {
  left: number;
  top: number;
  width: number;
  height: number;
}

const SIGNATURE = Buffer.from([137, 80, 78, 71, 13, 10, 26, 10]);
const COLOR_RGB = 2;
const FILTER_UP = 2;

function chunk(type: string, data: Buffer): Buffer {
  const out = Buffer.alloc(12 + data.length);
  out.writeUInt32BE(data.length, 0);
  out.write(type, 4, 'latin1');
  data.copy(out, 8);
  out.writeUInt32BE(crc32(out.subarray(4, 8 + data.length)), 8 + data.length);
  return out;
}

/**
 * The picture (or a region of it) as an 8-bit RGB PNG without alpha, like screencap's, each row "up"-filtered: flat UI
 * colours become runs of zeros that deflate to about 12 KB for a 1080x2400 screen. Written here rather than with
 * pngjs, whose per-pixel filter took 100-190 ms of a simulated phone's CPU for that screen against 25 ms: a screenshot
 * through Appium was then mostly the simulator's own encoding, on the same cores as the lab it benchmarks.
 */
export function encodePng(pixels: Pixels, region: Region = { left: 0, top: 0, width: pixels.width, height: pixels.height }): Buffer {
  const { left, top, width, height } = region;
  const src = pixels.data;
  const stride = width * 3 + 1;
  const raw = Buffer.allocUnsafe(stride * height);
  for (let y = 0; y < height; y++) {
    const out = y * stride;
    raw[out] = FILTER_UP;
    const row = ((top + y) * pixels.width + left) * 4;
    if (y === 0) {
      // The first row has nothing above it: "up" leaves it as it is.
      for (let x = 0, i = row, j = out + 1; x < width; x++, i += 4, j += 3) {
        raw[j] = src[i]!;
        raw[j + 1] = src[i + 1]!;
        raw[j + 2] = src[i + 2]!;
      }
      continue;
    }
    for (let x = 0, i = row, k = row - pixels.width * 4, j = out + 1; x < width; x++, i += 4, k += 4, j += 3) {
      raw[j] = (src[i]! - src[k]!) & 0xff;
      raw[j + 1] = (src[i + 1]! - src[k + 1]!) & 0xff;
      raw[j + 2] = (src[i + 2]! - src[k + 2]!) & 0xff;
    }
  }
  const header = Buffer.alloc(13);
  header.writeUInt32BE(width, 0);
  header.writeUInt32BE(height, 4);
  header[8] = 8; // bits per channel
  header[9] = COLOR_RGB;
  return Buffer.concat([SIGNATURE, chunk('IHDR', header), chunk('IDAT', deflateSync(raw)), chunk('IEND', Buffer.alloc(0))]);
}
