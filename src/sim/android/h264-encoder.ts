import { spawn, type ChildProcessByStdio } from 'node:child_process';
import type { Readable, Writable } from 'node:stream';

/**
 * The simulated phone's video encoder, standing in for the hardware H.264 encoder that a real screenrecord drives
 * through MediaCodec. It is Debian's ffmpeg with libx264 run as a child process: a maintained encoder whose output
 * every decoder reads, that runs off the event loop (a process of its own), and that ships with the ffprobe the tests
 * check the output with; the npm encoders are either WebAssembly builds of the same ffmpeg (megabytes, on the event
 * loop's thread) or bindings to a system ffmpeg anyway. Frames go in as raw RGBA, each stamped with the wall clock
 * as ffmpeg reads it, because a screen recorder sends a frame only when the screen changed: the timestamps are what
 * keep a still screen still in the MP4.
 */

export interface H264EncoderOptions {
  width: number;
  height: number;
  /** Bits per second, as MediaCodec's KEY_BIT_RATE. */
  bitRate: number;
  /** Seconds between keyframes, as MediaCodec's KEY_I_FRAME_INTERVAL. */
  keyframeIntervalS: number;
  /** The most frames per second the display shows: bounds the keyframe interval counted in frames. */
  maxFrameRate: number;
  /** `h264`: an Annex B byte stream on `output`; `mp4`: an MP4 file at `path`, its index written when it ends. */
  format: 'h264' | 'mp4';
  path?: string;
}

export class EncoderMissingError extends Error {
  constructor() {
    super('ffmpeg is not installed on this machine: install the Debian package `ffmpeg` (apt-get install -y ffmpeg).');
  }
}

export class H264Encoder {
  private readonly child: ChildProcessByStdio<Writable, Readable, Readable>;
  private readonly exited: Promise<number | null>;
  private stderr = '';
  private spawnError: Error | undefined;

  constructor(private readonly options: H264EncoderOptions) {
    const { width, height, bitRate, keyframeIntervalS, maxFrameRate, format } = options;
    const output = format === 'mp4' ? ['-f', 'mp4', '-y', options.path!] : ['-flush_packets', '1', '-f', 'h264', 'pipe:1'];
    this.child = spawn('ffmpeg', [
      '-hide_banner', '-loglevel', 'error',
      // Millisecond timestamps from the wall clock: a frame lasts until the screen changes again. Probing one frame
      // only: ffmpeg would otherwise hold the first frames back (and stamp them all alike) until it had read 5 MB.
      '-probesize', '32', '-analyzeduration', '0',
      '-use_wallclock_as_timestamps', '1', '-f', 'rawvideo', '-pix_fmt', 'rgba', '-s', `${width}x${height}`, '-framerate', '1000', '-i', 'pipe:0',
      '-fps_mode', 'passthrough',
      // ultrafast and zerolatency: no lookahead and no B-frames, so each frame leaves as soon as it is encoded, as a
      // phone's encoder in real-time mode does; one thread per phone leaves the cores to the engine under test.
      '-c:v', 'libx264', '-preset', 'ultrafast', '-tune', 'zerolatency', '-bf', '0', '-threads', '1', '-pix_fmt', 'yuv420p',
      // The rate control is told the display's rate, as a phone's encoder is (KEY_FRAME_RATE): left at the input's
      // timestamp rate of 1000, it gave each picture a thousandth of the bit rate, and a changed screen stayed blurred.
      '-b:v', String(bitRate), '-maxrate', String(bitRate), '-bufsize', String(bitRate), '-x264-params', `fps=${maxFrameRate}`,
      // A keyframe every keyframeIntervalS seconds of video and no others: x264's scene-cut keyframes are not what
      // a phone's encoder sends, and frames come only on change, so the interval is kept by time, not by count.
      '-g', String(Math.ceil(keyframeIntervalS * maxFrameRate)), '-sc_threshold', '0', '-force_key_frames', `expr:gte(t,n_forced*${keyframeIntervalS})`,
      ...output,
    ], { stdio: ['pipe', 'pipe', 'pipe'] });
    this.child.stderr.setEncoding('utf8').on('data', (text: string) => (this.stderr = (this.stderr + text).slice(-2000)));
    // A closed pipe is reported by exit and stderr; the write's own error would only repeat it.
    this.child.stdin.on('error', () => undefined);
    this.exited = new Promise((resolve) => {
      this.child.once('error', (error: NodeJS.ErrnoException) => {
        this.spawnError = error.code === 'ENOENT' ? new EncoderMissingError() : error;
        resolve(null);
      });
      this.child.once('close', (code) => resolve(code));
    });
  }

  /** The Annex B byte stream (format `h264`). */
  get output(): Readable {
    return this.child.stdout;
  }

  /** Waits until ffmpeg runs (or fails to start), so that a missing encoder is known before the first frame. */
  async started(): Promise<void> {
    await Promise.race([new Promise((resolve) => this.child.once('spawn', resolve)), this.exited]);
    if (this.spawnError) throw this.spawnError;
  }

  /** Hands ffmpeg one RGBA frame of width x height, waiting while its pipe is full. */
  async frame(rgba: Buffer): Promise<void> {
    const { width, height } = this.options;
    if (rgba.length !== width * height * 4) throw new RangeError(`a ${width}x${height} frame is ${width * height * 4} bytes, not ${rgba.length}`);
    if (this.child.stdin.destroyed || this.child.stdin.writableEnded) return;
    // Resolved once ffmpeg's pipe has the picture (not when it is only queued): the caller draws the next one into
    // the same memory.
    await Promise.race([new Promise<void>((resolve) => this.child.stdin.write(rgba, () => resolve())), this.exited]);
  }

  /** Ends the input and waits for ffmpeg to write everything out; fails with ffmpeg's own words if it failed. */
  async finish(): Promise<void> {
    this.child.stdin.end();
    const code = await this.exited;
    if (this.spawnError) throw this.spawnError;
    if (code !== 0) throw new Error(`ffmpeg exited with ${code}: ${this.stderr.trim()}`);
  }

  /** Stops at once, for a recording nobody will read. */
  kill(): void {
    this.child.kill('SIGKILL');
  }
}
