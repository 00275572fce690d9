import { execFileSync, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** Recording tests need Debian's ffmpeg (and the ffprobe it brings): under CI its absence is a failure, elsewhere a loud skip. */
export function ffmpegOrSkip(): boolean {
  if (spawnSync('ffmpeg', ['-version']).status === 0 && spawnSync('ffprobe', ['-version']).status === 0) return true;
  if (process.env.CI === 'true') throw new Error('ffmpeg is missing: install the Debian package `ffmpeg` (apt-get install -y ffmpeg).');
  console.warn('SKIPPING recording tests: ffmpeg is not installed (apt-get install -y ffmpeg).');
  return false;
}

export interface Probe {
  format: { format_name: string; duration?: string };
  streams: Array<{ codec_name: string; codec_type: string; width: number; height: number; nb_read_packets?: string }>;
}

/** What Debian's ffprobe reads in a file or in bytes, with the packets (access units) counted. */
export function ffprobe(input: { path: string } | { bytes: Buffer }): Probe {
  const source = 'path' in input ? input.path : 'pipe:0';
  const out = execFileSync('ffprobe', ['-v', 'error', '-count_packets', '-show_entries', 'format=format_name,duration:stream=codec_name,codec_type,width,height,nb_read_packets', '-of', 'json', '-i', source], {
    input: 'bytes' in input ? input.bytes : undefined,
  });
  return JSON.parse(out.toString()) as Probe;
}

/**
 * A real encoder's H.264 MP4 of an ffmpeg lavfi source (`testsrc=size=64x64:rate=10:duration=1`), written to a file as a
 * phone's recorder writes it (its index last).
 */
export function encodedVideo(source: string): Buffer {
  const dir = mkdtempSync(join(tmpdir(), 'benchtop-video-'));
  try {
    const file = join(dir, 'v.mp4');
    const run = spawnSync('ffmpeg', ['-loglevel', 'error', '-f', 'lavfi', '-i', source, '-c:v', 'libx264', '-pix_fmt', 'yuv420p', file]);
    if (run.error || run.status !== 0) throw new Error(`ffmpeg could not encode (install the Debian package \`ffmpeg\`): ${run.stderr?.toString() ?? run.error?.message}`);
    return readFileSync(file);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
