import { readVideoMessage } from '../shared/api/live-screen.js';

/**
 * The live screen's H.264 in the page: WebCodecs decodes the access units the engine relays (Annex B, parameter sets in
 * band, so the decoder is configured with the codec string alone) and each picture is drawn to a canvas.
 */

/** A Baseline profile stream at level 3: what any H.264 decoder handles, so a yes here means H.264 works at all. */
const PROBE_CODEC = 'avc1.42E01E';

/** Whether this page can decode H.264 (WebCodecs exists only on a secure origin, and not in every browser). */
export async function canDecodeH264(): Promise<boolean> {
  if (typeof VideoDecoder === 'undefined') return false;
  try {
    return (await VideoDecoder.isConfigSupported({ codec: PROBE_CODEC })).supported === true;
  } catch {
    return false;
  }
}

export class H264Player {
  private decoder: VideoDecoder | undefined;
  private codec: string | undefined;
  private stream = '';
  /** Until a keyframe comes, what depends on an earlier picture cannot be decoded: it is dropped. */
  private waiting = true;
  /** Whether this stream has given a picture: a decoder that fails before its first one refuses the stream. */
  private drawn = false;
  private refused = false;

  constructor(
    private readonly canvas: HTMLCanvasElement,
    /** Each picture drawn, with its size. */
    private readonly onPicture: (width: number, height: number) => void,
    /**
     * This page cannot decode the phone's stream after all: the probe's Baseline profile decodes, but the phone's
     * encoder chose a profile, level or size this browser's decoder refuses. Said once, with why, in a sentence.
     */
    private readonly onRefused: (reason: string) => void,
  ) {}

  /** The hello's codec and size: a new one (a rotation, another stream) starts a new decoder at the next keyframe. */
  configure(codec: string, width: number, height: number): void {
    const stream = `${codec} ${width}x${height}`;
    if (stream === this.stream && this.decoder?.state === 'configured') return;
    this.stream = stream;
    this.codec = codec;
    this.drawn = false;
    this.reset();
    // Asked of this stream's own codec and size, which the probe could not know.
    VideoDecoder.isConfigSupported({ codec, codedWidth: width || undefined, codedHeight: height || undefined }).then(
      (support) => support.supported !== true && this.refuse(`this browser cannot decode ${codec} at ${width}x${height}`),
      () => this.refuse(`this browser cannot decode ${codec}`),
    );
  }

  /** One binary message of the screen socket. */
  push(message: ArrayBuffer): void {
    if (this.refused) return;
    const { keyframe, timestampMs, data } = readVideoMessage(message);
    if (this.waiting && !keyframe) return;
    if (!this.decoder || this.decoder.state === 'closed') this.reset();
    const decoder = this.decoder!;
    if (decoder.state !== 'configured') return;
    this.waiting = false;
    decoder.decode(new EncodedVideoChunk({ type: keyframe ? 'key' : 'delta', timestamp: timestampMs * 1000, data }));
  }

  close(): void {
    if (this.decoder && this.decoder.state !== 'closed') this.decoder.close();
    this.decoder = undefined;
  }

  private reset(): void {
    this.close();
    this.waiting = true;
    if (!this.codec) return;
    const decoder = new VideoDecoder({
      output: (frame) => {
        // Catching up (a new viewer is sent the keyframe and the pictures since): only the newest is worth drawing.
        if (decoder.decodeQueueSize === 0) this.draw(frame);
        frame.close();
      },
      // A broken stream: the next keyframe starts a fresh decoder. One that never gave a picture is a refusal.
      error: (e) => {
        this.waiting = true;
        if (!this.drawn) this.refuse(`the browser's decoder refused ${this.codec}: ${e.message}`);
      },
    });
    try {
      decoder.configure({ codec: this.codec, optimizeForLatency: true });
    } catch (e) {
      this.refuse(`the browser's decoder refused ${this.codec}: ${(e as Error).message}`);
      return;
    }
    this.decoder = decoder;
  }

  private refuse(reason: string): void {
    if (this.refused) return;
    this.refused = true;
    this.close();
    this.onRefused(reason);
  }

  private draw(frame: VideoFrame): void {
    const { displayWidth: width, displayHeight: height } = frame;
    if (this.canvas.width !== width || this.canvas.height !== height) {
      this.canvas.width = width;
      this.canvas.height = height;
    }
    this.canvas.getContext('2d')?.drawImage(frame, 0, 0, width, height);
    this.drawn = true;
    this.onPicture(width, height);
  }
}
