import { spawnSync } from 'node:child_process';
import { PassThrough } from 'node:stream';
import { setTimeout as sleep } from 'node:timers/promises';
import { describe, expect, it } from 'vitest';
import { AccessUnitAssembler, NalSplitter } from './annex-b.js';
import { FLUSH_MS, ScreenrecordRun, wholePicture } from './h264-feed.js';

/**
 * A real encoder's pictures (a moving test pattern at 720p, an IDR every 10), each as the bytes screenrecord writes:
 * keyframes of about 10 KB and P pictures of a few hundred bytes, far on either side of what a chunk's shape can vouch
 * for (under 4096 bytes).
 */
function pictures(): Buffer[] | undefined {
  const run = spawnSync('ffmpeg', ['-loglevel', 'error', '-f', 'lavfi', '-i', 'testsrc=size=720x1280:rate=30', '-frames:v', '30',
    '-pix_fmt', 'yuv420p', '-c:v', 'libx264', '-profile:v', 'baseline', '-g', '10', '-bf', '0', '-f', 'h264', '-'], { maxBuffer: 64 << 20 });
  if (run.error || run.status !== 0) {
    if (process.env.CI === 'true') throw new Error('ffmpeg is missing: install the Debian package `ffmpeg` (apt-get install -y ffmpeg).');
    return undefined;
  }
  // Cut where the next picture begins: each piece holds one picture's NAL units with their start codes.
  const nals = new NalSplitter();
  const assembler = new AccessUnitAssembler();
  const out: Buffer[] = [];
  const units = [...nals.push(run.stdout), nals.flush()!];
  for (const unit of units) {
    const au = assembler.push(unit);
    if (au) out.push(au.data);
  }
  out.push(assembler.flush()!.data);
  return out;
}

/** How bionic's stdio hands screenrecord's fwrite + fflush of one picture to write(): whole blocks, then the rest. */
function stdioWrites(picture: Buffer, block: number): Buffer[] {
  if (picture.length < block) return [picture];
  const writes: Buffer[] = [];
  let at = 0;
  for (; picture.length - at >= block; at += block) writes.push(picture.subarray(at, at + block));
  if (at < picture.length) writes.push(picture.subarray(at));
  return writes;
}

/** A run over a stream whose reads the test makes itself, chunk by chunk, as the socket would deliver them. */
function run(writesIntact: boolean) {
  const stream = new PassThrough();
  const geometry = { rotation: 0, screen: { width: 1080, height: 1920 }, width: 720, height: 1280 };
  const screenrecord = new ScreenrecordRun(stream, geometry, () => undefined, writesIntact);
  return {
    read: (chunk: Buffer) => void stream.emit('data', chunk),
    take: () => screenrecord.take(),
  };
}

/** A run that has had the stream's keyframe (its parameter sets), as every run does first. */
async function started(writesIntact: boolean) {
  const r = run(writesIntact);
  r.read(encoded![0]!);
  await sleep(FLUSH_MS * 3);
  expect(r.take()?.keyframe).toBe(true);
  return r;
}

const encoded = pictures();

describe('when a picture of the phone\'s H.264 is complete', () => {
  it('a chunk that is one whole small write of a picture, and nothing else, is one by its shape', () => {
    const startCode = Buffer.from([0, 0, 0, 1, 0x41, 0x9a]);
    const sized = (n: number, head = startCode) => Buffer.concat([head, Buffer.alloc(n - head.length, 7)]);
    expect(wholePicture(sized(370))).toBe(true);
    expect(wholePicture(sized(370, Buffer.from([0, 0, 1, 0x41])))).toBe(true);
    expect(wholePicture(sized(4095))).toBe(true);
    // A block of stdio's, or several: a larger picture's first writes, with the rest still to come.
    expect(wholePicture(sized(1024))).toBe(false);
    expect(wholePicture(sized(2048))).toBe(false);
    // Too large to have been one write that arrives whole.
    expect(wholePicture(sized(4096))).toBe(false);
    expect(wholePicture(sized(5000))).toBe(false);
    // Not the beginning of a picture.
    expect(wholePicture(Buffer.alloc(370, 7))).toBe(false);
  });

  it.skipIf(!encoded)('from the lab\'s own adb server, small pictures go out at once and larger ones after the pause, each whole', async () => {
    const small = encoded!.filter((p) => wholePicture(p));
    const large = encoded!.filter((p) => !wholePicture(p));
    // The moving pattern gives both kinds (three keyframes); else the test shows nothing.
    expect(small.length).toBeGreaterThan(20);
    expect(large.length).toBeGreaterThanOrEqual(3);
    for (const block of [4096, 1024]) {
      const r = run(true);
      for (const picture of encoded!) {
        const writes = stdioWrites(picture, block);
        for (const write of writes) r.read(write);
        if (wholePicture(picture) && writes.length === 1) {
          const unit = r.take();
          expect(unit?.data.equals(picture)).toBe(true);
          // A P picture goes out as the very bytes that came: nothing split, nothing copied.
          if (!unit?.keyframe) expect(unit?.data).toBe(writes[0]);
        } else {
          expect(r.take()).toBeUndefined();
          await sleep(FLUSH_MS * 3);
          expect(r.take()?.data.equals(picture)).toBe(true);
        }
      }
    }
  });

  it.skipIf(!encoded)('through a provider\'s SSH channel or a network, where a read can end anywhere, every picture waits for the pause; so does the last of two in one read', async () => {
    const r = await started(false);
    const picture = encoded!.find((p) => wholePicture(p))!;
    r.read(picture);
    expect(r.take()).toBeUndefined();
    await sleep(FLUSH_MS * 3);
    expect(r.take()?.data.equals(picture)).toBe(true);
    // Two small pictures in one read, from the lab's own server: the read's shape says nothing of the second one's
    // writes (the first's length comes before them), so both wait for the pause.
    const [a, b] = encoded!.filter((p) => wholePicture(p)).slice(0, 2) as [Buffer, Buffer];
    const both = await started(true);
    both.read(Buffer.concat([a, b]));
    expect(both.take()).toBeUndefined();
    await sleep(FLUSH_MS * 3);
    expect(both.take()?.data.equals(a)).toBe(true);
    expect(both.take()?.data.equals(b)).toBe(true);
  });
});
