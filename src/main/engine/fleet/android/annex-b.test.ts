import { spawnSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { AccessUnitAssembler, codecOfSps, NalSplitter, type AccessUnit } from './annex-b.js';

/** A real encoder's stream, as screenrecord writes it: one IDR, then P pictures only (a long keyframe interval). */
function encoded(frames: number, gop = 300): Buffer | undefined {
  const run = spawnSync('ffmpeg', ['-loglevel', 'error', '-f', 'lavfi', '-i', 'testsrc=size=360x640:rate=30', '-frames:v', String(frames),
    '-pix_fmt', 'yuv420p', '-c:v', 'libx264', '-profile:v', 'baseline', '-g', String(gop), '-bf', '0', '-f', 'h264', '-'], { maxBuffer: 64 << 20 });
  if (run.error || run.status !== 0) {
    if (process.env.CI === 'true') throw new Error('ffmpeg is missing: install the Debian package `ffmpeg` (apt-get install -y ffmpeg).');
    return undefined;
  }
  return run.stdout;
}

/** Feeds the stream in chunks of the given size, flushing (a pause in the stream) only at the end. */
function split(stream: Buffer, chunk: number): AccessUnit[] {
  const nals = new NalSplitter();
  const assembler = new AccessUnitAssembler();
  const out: AccessUnit[] = [];
  const add = (unit: Buffer) => {
    const au = assembler.push(unit);
    if (au) out.push(au);
  };
  for (let i = 0; i < stream.length; i += chunk) nals.push(stream.subarray(i, i + chunk)).forEach(add);
  const tail = nals.flush();
  if (tail) add(tail);
  const last = assembler.flush();
  if (last) out.push(last);
  return out;
}

/** An access unit's NAL units, without their start codes. */
function splitUnits(data: Buffer): Buffer[] {
  const nals = new NalSplitter();
  return [...nals.push(data), nals.flush()!];
}

const stream = encoded(45);

describe.skipIf(!stream)('splitting screenrecord\'s Annex B stream into access units', () => {
  it('finds one access unit per picture, the first a keyframe with its parameter sets, however the bytes arrive', () => {
    for (const chunk of [1, 7, 4096, stream!.length]) {
      const units = split(stream!, chunk);
      expect(units).toHaveLength(45);
      expect(units.map((u) => u.keyframe)).toEqual([true, ...Array(44).fill(false)]);
      expect(units[0]!.codec).toBe('avc1.42C01E');
      // SPS then PPS lead the keyframe: a decoder configured with no description needs them in band.
      expect([...units[0]!.data.subarray(0, 5)]).toEqual([0, 0, 0, 1, 0x67]);
      expect(Buffer.concat(units.map((u) => u.data)).length).toBeGreaterThanOrEqual(stream!.length - 45);
    }
  });

  it('decodes back to the same pictures (ffmpeg reads the access units as the original stream)', () => {
    const units = split(stream!, 1000);
    const probe = spawnSync('ffprobe', ['-loglevel', 'error', '-count_frames', '-show_entries', 'stream=nb_read_frames,width,height', '-of', 'csv=p=0', '-f', 'h264', '-'], { input: Buffer.concat(units.map((u) => u.data)) });
    expect(probe.stdout.toString().trim()).toBe('360,640,45');
  });

  it('marks each IDR as a keyframe and repeats the parameter sets in front of one that lacks them', () => {
    const units = split(encoded(20, 10)!, 500);
    expect(units.map((u, i) => [i, u.keyframe]).filter(([, k]) => k).map(([i]) => i)).toEqual([0, 10]);
    expect(units[10]!.data.subarray(0, 5)[4]! & 0x1f).toBe(7);
  });

  it('takes a P picture written whole as its own access unit, the same bytes, and leaves everything else to the split', () => {
    const units = split(stream!, 1000);
    const assembler = new AccessUnitAssembler();
    const [key, p, next] = units as [AccessUnit, AccessUnit, AccessUnit];
    // Before a keyframe there is no parameter set: nothing to decode it with.
    expect(assembler.whole(p.data)).toBeUndefined();
    expect(assembler.whole(key.data)).toBeUndefined();
    for (const unit of splitUnits(key.data)) assembler.push(unit);
    expect(assembler.flush()?.keyframe).toBe(true);
    const taken = assembler.whole(p.data);
    expect(taken?.data).toBe(p.data);
    expect(taken).toMatchObject({ keyframe: false, codec: 'avc1.42C01E' });
    // Two pictures in one write, a three-byte start code, trailing zeros: split as before.
    expect(assembler.whole(Buffer.concat([p.data, next.data]))).toBeUndefined();
    expect(assembler.whole(p.data.subarray(1))).toBeUndefined();
    expect(assembler.whole(Buffer.concat([p.data, Buffer.alloc(2)]))).toBeUndefined();
    // A unit under way comes first: the picture waits its turn.
    assembler.push(next.data.subarray(4));
    expect(assembler.whole(p.data)).toBeUndefined();
  });

  it('gives nothing before the first SPS, and keeps what is not a start code as text (an error printed instead of video)', () => {
    const nals = new NalSplitter();
    expect(nals.push(Buffer.from('ERROR: unable to create video encoder\n'))).toEqual([]);
    expect(nals.text).toContain('unable to create video encoder');
    const assembler = new AccessUnitAssembler();
    expect(assembler.push(Buffer.from([0x41, 0x9a, 0x00]))).toBeUndefined();
    expect(assembler.flush()).toBeUndefined();
  });
});

describe('the codec string', () => {
  it('is avc1 with the SPS\'s profile, constraint flags and level in hex', () => {
    expect(codecOfSps(Buffer.from([0x67, 0x64, 0x00, 0x28, 0xac]))).toBe('avc1.640028');
    expect(codecOfSps(Buffer.from([0x27, 0x42, 0xe0, 0x1e]))).toBe('avc1.42E01E');
  });
});
