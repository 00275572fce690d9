import { PNG } from 'pngjs';
import { describe, expect, it } from 'vitest';
import { encodePng } from './png.js';

/** Pixels whose channels wrap around when one row is subtracted from the next: the "up" filter's arithmetic shows. */
function pixels(width: number, height: number) {
  const data = Buffer.alloc(width * height * 4);
  for (let i = 0; i < width * height; i++) {
    data[i * 4] = (i * 37) & 0xff;
    data[i * 4 + 1] = (i * 101 + 7) & 0xff;
    data[i * 4 + 2] = 255 - ((i * 13) & 0xff);
    data[i * 4 + 3] = 0x80; // alpha is dropped, as screencap's RGB has none
  }
  return { width, height, data };
}

describe('the simulators\' PNG encoder, read back by pngjs', () => {
  it('encodes the whole picture as 8-bit RGB with the same pixels', () => {
    const p = pixels(33, 21);
    const back = PNG.sync.read(encodePng(p));
    expect([back.width, back.height]).toEqual([33, 21]);
    for (let i = 0; i < 33 * 21; i++) {
      expect([back.data[i * 4], back.data[i * 4 + 1], back.data[i * 4 + 2], back.data[i * 4 + 3]]).toEqual([p.data[i * 4], p.data[i * 4 + 1], p.data[i * 4 + 2], 255]);
    }
  });

  it('encodes a region (an element\'s screenshot) with the pixels under it', () => {
    const p = pixels(40, 30);
    const region = { left: 5, top: 7, width: 11, height: 9 };
    const back = PNG.sync.read(encodePng(p, region));
    expect([back.width, back.height]).toEqual([11, 9]);
    for (let y = 0; y < 9; y++) {
      for (let x = 0; x < 11; x++) {
        const from = ((7 + y) * 40 + 5 + x) * 4;
        const to = (y * 11 + x) * 4;
        expect([back.data[to], back.data[to + 1], back.data[to + 2]]).toEqual([p.data[from], p.data[from + 1], p.data[from + 2]]);
      }
    }
  });
});
