import { execFileSync, spawnSync } from 'node:child_process';

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
