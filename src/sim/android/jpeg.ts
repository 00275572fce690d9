import { createRequire } from 'node:module';
import { encode as encodeWithJpegJs } from 'jpeg-js';
import type { Canvas } from './canvas.js';

type Sharp = typeof import('sharp').default;

/**
 * A real phone's minicap encodes with libjpeg-turbo, 30 to 60 frames a second. sharp ships libjpeg-turbo prebuilt
 * (npm packages per platform, nothing downloaded at install): with it the simulated minicap encodes as the real one
 * does, and a live-screen figure measures the engine rather than the simulator's encoder. Where sharp does not load
 * (a platform without its prebuilt package), jpeg-js, pure JavaScript, encodes the same frames at about 12 a second.
 * BENCHTOP_SIM_JPEG=jpeg-js chooses the fallback on purpose.
 */
let sharp: Sharp | null | undefined;

function loadSharp(): Sharp | null {
  if (sharp !== undefined) return sharp;
  if (process.env.BENCHTOP_SIM_JPEG === 'jpeg-js') return (sharp = null);
  try {
    sharp = createRequire(import.meta.url)('sharp') as Sharp;
    // One frame at a time per phone: a thread per core would take the CPU the engine under test needs.
    sharp.concurrency(1);
  } catch {
    sharp = null;
  }
  return sharp;
}

/** Which encoder the simulated minicap uses here. */
export function jpegEncoder(): 'sharp' | 'jpeg-js' {
  return loadSharp() ? 'sharp' : 'jpeg-js';
}

/**
 * The canvas scaled to width x height and JPEG-encoded, as minicap's virtual display and libjpeg-turbo do. The scaling
 * averages the source pixels each target pixel covers (a box filter), with either encoder.
 */
export async function encodeJpeg(canvas: Canvas, width: number, height: number, quality: number, encoder = jpegEncoder()): Promise<Buffer> {
  const fast = encoder === 'sharp' ? loadSharp() : null;
  if (fast) {
    let image = fast(canvas.data, { raw: { width: canvas.width, height: canvas.height, channels: 4 } });
    if (canvas.width !== width || canvas.height !== height) image = image.resize(width, height, { fit: 'fill', kernel: 'linear' });
    return image.removeAlpha().jpeg({ quality }).toBuffer();
  }
  const pixels = canvas.width === width && canvas.height === height ? canvas.data : scale(canvas, width, height);
  return encodeWithJpegJs({ width, height, data: pixels }, quality).data;
}

/** Box-filter downscale (each target pixel averages the source pixels it covers); nearest pixel when enlarging. */
function scale(c: Canvas, width: number, height: number): Buffer {
  const out = Buffer.alloc(width * height * 4);
  const sx = c.width / width;
  const sy = c.height / height;
  for (let y = 0; y < height; y++) {
    const y0 = Math.floor(y * sy);
    const y1 = Math.max(y0 + 1, Math.min(c.height, Math.floor((y + 1) * sy)));
    for (let x = 0; x < width; x++) {
      const x0 = Math.floor(x * sx);
      const x1 = Math.max(x0 + 1, Math.min(c.width, Math.floor((x + 1) * sx)));
      let r = 0;
      let g = 0;
      let b = 0;
      for (let yy = y0; yy < y1; yy++) {
        let i = (yy * c.width + x0) * 4;
        for (let xx = x0; xx < x1; xx++, i += 4) {
          r += c.data[i]!;
          g += c.data[i + 1]!;
          b += c.data[i + 2]!;
        }
      }
      const n = (y1 - y0) * (x1 - x0);
      const o = (y * width + x) * 4;
      out[o] = r / n;
      out[o + 1] = g / n;
      out[o + 2] = b / n;
      out[o + 3] = 255;
    }
  }
  return out;
}
