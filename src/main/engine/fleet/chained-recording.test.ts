import { execFileSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { encodedVideo } from '../../../../test/support/ffmpeg.js';
import { mp4Seconds, mp4VideoSize } from '../domain/mp4-duration.js';
import { joinMp4 } from './chained-recording.js';

/** A real encoder's MP4: `seconds` of one colour at `size`, as a phone's recorder writes a still screen. */
const segment = (colour: string, size: string, seconds: number): Buffer => encodedVideo(`color=c=${colour}:size=${size}:rate=10:duration=${seconds}`);

/** The picture at `seconds` as RGB, decoded by ffmpeg at the size the file states. */
function pictureAt(mp4: Buffer, seconds: number): { width: number; height: number; rgb: (x: number, y: number) => number[] } {
  const { width, height } = mp4VideoSize(mp4)!;
  const raw = execFileSync('ffmpeg', ['-loglevel', 'error', '-ss', String(seconds), '-i', 'pipe:0', '-frames:v', '1', '-f', 'rawvideo', '-pix_fmt', 'rgb24', 'pipe:1'], { input: mp4 });
  expect(raw.length).toBe(width * height * 3);
  return { width, height, rgb: (x, y) => [...raw.subarray((y * width + x) * 3, (y * width + x) * 3 + 3)] };
}

describe('joinMp4: a run\'s video segments as one MP4', () => {
  it('fits a segment recorded after a rotation into the first one\'s size, letterboxed, each kept for the time it covered', async () => {
    const joined = await joinMp4([
      { data: segment('red', '320x640', 1), seconds: 2 },
      { data: segment('blue', '640x320', 1), seconds: 1 },
    ]);
    expect(mp4VideoSize(joined)).toEqual({ width: 320, height: 640 });
    expect(mp4Seconds(joined)).toBeCloseTo(3, 0);
    // The first segment's last picture is held until the second began, at 2 s.
    const held = pictureAt(joined, 1.5);
    expect(held.rgb(160, 20)[0]).toBeGreaterThan(200);
    // The landscape picture, scaled to 320x160, sits in the middle with black above and below.
    const turned = pictureAt(joined, 2.5);
    expect([turned.width, turned.height]).toEqual([320, 640]);
    expect(turned.rgb(160, 320)[2]).toBeGreaterThan(200);
    expect(Math.max(...turned.rgb(160, 20))).toBeLessThan(30);
    expect(Math.max(...turned.rgb(160, 620))).toBeLessThan(30);
  });

  it('copies segments of one size as they are', async () => {
    const joined = await joinMp4([
      { data: segment('red', '320x640', 1), seconds: 1 },
      { data: segment('red', '320x640', 1), seconds: 1 },
    ]);
    expect(mp4VideoSize(joined)).toEqual({ width: 320, height: 640 });
    expect(mp4Seconds(joined)).toBeCloseTo(2, 0);
  });
});
