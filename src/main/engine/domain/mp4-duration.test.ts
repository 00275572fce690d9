import { describe, expect, it } from 'vitest';
import { encodedVideo } from '../../../../test/support/ffmpeg.js';
import { mp4Seconds, mp4VideoSize } from './mp4-duration.js';

/** A real encoder's MP4 of `seconds` at `size`. */
const encoded = (seconds: number, size = '64x64'): Buffer => encodedVideo(`testsrc=size=${size}:rate=10:duration=${seconds}`);

describe('mp4Seconds: a video\'s duration from its movie header', () => {
  it('reads what ffprobe reads of a real MP4', () => {
    const mp4 = encoded(2.5);
    expect(mp4Seconds(mp4)).toBeCloseTo(2.5, 1);
  });

  it('has none for what is not an MP4 or is cut short', () => {
    expect(mp4Seconds(Buffer.from('not a video at all'))).toBeUndefined();
    const mp4 = encoded(1);
    expect(mp4Seconds(mp4.subarray(0, 40))).toBeUndefined();
  });
});

describe('mp4VideoSize: the picture size of a video\'s track', () => {
  it('reads what the encoder was given, portrait and landscape, and has none for what is not an MP4', () => {
    expect(mp4VideoSize(encoded(0.5, '320x640'))).toEqual({ width: 320, height: 640 });
    expect(mp4VideoSize(encoded(0.5, '640x320'))).toEqual({ width: 640, height: 320 });
    expect(mp4VideoSize(Buffer.from('not a video at all'))).toBeUndefined();
  });
});
