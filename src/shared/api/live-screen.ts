/**
 * The live screen's WebSocket (`GET /sessions/{sid}/devices/{serial}/screen`), as the engine writes it and the page
 * reads it.
 *
 * The client says what it decodes with `?codecs=h264,jpeg` (JPEG and PNG are always taken). The first message is a
 * text hello; a new hello precedes a frame whose size, format, codec or source differs (a rotation, a fallback). Each
 * binary message is one frame in the hello's format:
 * - `jpeg`, `png`: the image itself, as before;
 * - `h264`: VIDEO_HEADER_BYTES of header, then one access unit in Annex B (start codes; SPS and PPS in band before
 *   each keyframe, so a WebCodecs VideoDecoder configured with the hello's codec and no description decodes it).
 *   Header byte 0: flags, bit 0 set on a keyframe; bytes 1-4: the engine's timestamp in ms since the feed started,
 *   big-endian. The first access unit a viewer gets, and the first after any it missed, is a keyframe.
 */
export interface ScreenHello {
  type: 'hello';
  /** The screen in the phone's pixels: what actions take. */
  width: number;
  height: number;
  /** The frames' own size (smaller when scaled to maxSize). */
  frameWidth: number;
  frameHeight: number;
  format: 'jpeg' | 'png' | 'h264';
  source: 'screenrecord' | 'minicap' | 'mjpeg' | 'screencap';
  /** With `h264`: the RFC 6381 codec string (avc1.PPCCLL) from the stream's SPS. */
  codec?: string;
  /** Why this source, when the one asked for first was not used (screenrecord gave no video, the phone has none). */
  reason?: string;
}

/** The codecs a viewer may name in `codecs=`, beyond the JPEG and PNG every viewer takes. */
export const VIDEO_CODECS = ['h264'] as const;

export const VIDEO_HEADER_BYTES = 5;
export const KEYFRAME_FLAG = 1;

/** Writes an H.264 message's header into its first VIDEO_HEADER_BYTES (byte by byte: a DataView per picture cost more). */
export function writeVideoHeader(message: Uint8Array, keyframe: boolean, timestampMs: number): void {
  const t = timestampMs >>> 0;
  message[0] = keyframe ? KEYFRAME_FLAG : 0;
  message[1] = t >>> 24;
  message[2] = (t >>> 16) & 0xff;
  message[3] = (t >>> 8) & 0xff;
  message[4] = t & 0xff;
}

/** An H.264 message read back: the flags, the timestamp and the access unit. */
export function readVideoMessage(message: ArrayBuffer): { keyframe: boolean; timestampMs: number; data: Uint8Array } {
  const view = new DataView(message);
  return { keyframe: (view.getUint8(0) & KEYFRAME_FLAG) !== 0, timestampMs: view.getUint32(1), data: new Uint8Array(message, VIDEO_HEADER_BYTES) };
}
