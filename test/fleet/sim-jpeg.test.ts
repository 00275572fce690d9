import { decode as decodeJpeg } from 'jpeg-js';
import { describe, expect, it } from 'vitest';
import { Canvas } from '../../src/sim/android/canvas.js';
import { encodeJpeg, jpegEncoder } from '../../src/sim/android/jpeg.js';

/** A phone-sized frame with flat UI colours and hard edges, as the simulated launcher draws. */
function frame(): Canvas {
  const c = new Canvas(1080, 2400, [250, 250, 250]);
  c.fillRect(0, 0, 1080, 96, [33, 33, 33]);
  c.fillRect(120, 600, 840, 300, [26, 115, 232]);
  c.fillRect(120, 1200, 400, 400, [219, 68, 55]);
  c.fillRect(560, 1200, 400, 400, [15, 157, 88]);
  return c;
}

/** Mean absolute difference per channel between two decoded RGBA images of the same size. */
function meanDifference(a: Uint8Array, b: Uint8Array): number {
  let sum = 0;
  let n = 0;
  for (let i = 0; i < a.length; i += 4) {
    for (let ch = 0; ch < 3; ch++, n++) sum += Math.abs(a[i + ch]! - b[i + ch]!);
  }
  return sum / n;
}

describe('the simulated minicap\'s JPEG encoder', () => {
  it('is libjpeg-turbo (sharp) here, as a real phone\'s minicap, and jpeg-js, the fallback, encodes the same picture', async () => {
    // sharp is a dependency with a prebuilt package for this platform: here it must load, not quietly fall back.
    expect(jpegEncoder()).toBe('sharp');
    const canvas = frame();
    const fast = await encodeJpeg(canvas, 360, 800, 80, 'sharp');
    const fallback = await encodeJpeg(canvas, 360, 800, 80, 'jpeg-js');
    const a = decodeJpeg(fast, { useTArray: true });
    const b = decodeJpeg(fallback, { useTArray: true });
    expect([a.width, a.height, b.width, b.height]).toEqual([360, 800, 360, 800]);
    // Both scale with a box-like filter and encode at the same quality: the same picture within JPEG noise.
    expect(meanDifference(a.data, b.data)).toBeLessThan(3);
    // The blue card is where it was drawn (x 120..960, y 600..900 at 1080x2400: x 40..320, y 200..300 at 360x800).
    const at = (x: number, y: number) => [...a.data.subarray((y * 360 + x) * 4, (y * 360 + x) * 4 + 3)];
    for (const [ch, want] of at(180, 250).map((v, i) => [v, [26, 115, 232][i]!])) expect(Math.abs(ch! - want!)).toBeLessThan(8);
    // At full size nothing is scaled.
    const full = decodeJpeg(await encodeJpeg(canvas, 1080, 2400, 80, 'sharp'), { useTArray: true });
    expect([full.width, full.height]).toEqual([1080, 2400]);
  });
});
