/**
 * H.264 in Annex B (the byte stream `screenrecord --output-format=h264` writes): NAL units behind 00 00 01 or
 * 00 00 00 01 start codes, grouped here into access units (one picture each) without decoding anything. Pure: no I/O.
 */

/** NAL unit types this splitter needs (ITU-T H.264 table 7-1). */
const NAL = { SLICE: 1, IDR: 5, SEI: 6, SPS: 7, PPS: 8, AUD: 9 } as const;

/** One picture's NAL units, start codes kept, ready for a decoder that takes Annex B. */
export interface AccessUnit {
  data: Buffer;
  /** An IDR picture: decodable on its own, and nothing after it refers to anything before it. */
  keyframe: boolean;
  /** The codec string of the sequence it belongs to (avc1.PPCCLL), from the last SPS seen. */
  codec: string;
}

/** The RFC 6381 codec string of an SPS NAL unit (its header byte first): profile, constraint flags and level. */
export function codecOfSps(sps: Buffer): string {
  const hex = (b: number) => b.toString(16).toUpperCase().padStart(2, '0');
  return `avc1.${hex(sps[1]!)}${hex(sps[2]!)}${hex(sps[3]!)}`;
}

const isVcl = (type: number) => type >= NAL.SLICE && type <= NAL.IDR;
/** A picture's first slice (the unit from `at`): first_mb_in_slice is 0, whose ue(v) code is the single bit 1. */
const isFirstSlice = (unit: Buffer, at = 0) => isVcl(unit[at]! & 0x1f) && unit.length > at + 1 && (unit[at + 1]! & 0x80) !== 0;

/** How many pictures begin among these NAL units and `last`: each has exactly one first slice. */
export function picturesBegun(units: readonly Buffer[], last?: Buffer): number {
  let count = last && last.length > 0 && isFirstSlice(last) ? 1 : 0;
  for (const unit of units) if (unit.length > 0 && isFirstSlice(unit)) count++;
  return count;
}

/** A three-byte start code; a four-byte one is a zero byte and this. */
const START = Buffer.from([0, 0, 1]);

/**
 * Splits a byte stream into NAL units as it arrives. A unit is complete when the next start code appears, which for
 * the last unit of a burst (a screen that stopped changing) may be never: `flush` then takes it as complete.
 *
 * Start codes are found with Buffer#indexOf (native), and each push searches only the bytes it has not searched
 * before: a picture that arrives in many chunks was searched again from its start at every chunk, and byte by byte
 * for its zeros, which made the live screen's H.264 cost the engine more CPU than minicap's JPEG.
 */
export class NalSplitter {
  private buffer: Buffer = Buffer.alloc(0);
  /** Whether the buffer begins with a start code: it does from the first one on, until a flush. */
  private started = false;

  /** The complete units in `chunk` and what came before it, each without its start code. */
  push(chunk: Buffer): Buffer[] {
    const searched = this.buffer.length;
    this.buffer = searched === 0 ? chunk : Buffer.concat([this.buffer, chunk]);
    // What was searched before holds no start code but perhaps in its last two bytes, which this chunk may complete.
    let from = Math.max(this.started ? START.length : 0, searched - 2);
    if (!this.started) {
      const first = this.buffer.indexOf(START, from);
      if (first === -1) return [];
      this.buffer = this.buffer.subarray(first);
      this.started = true;
      from = START.length;
    }
    const units: Buffer[] = [];
    let unitStart = START.length;
    for (let next = this.buffer.indexOf(START, from); next !== -1; next = this.buffer.indexOf(START, unitStart)) {
      units.push(trimZeros(this.buffer.subarray(unitStart, next)));
      unitStart = next + START.length;
    }
    this.buffer = this.buffer.subarray(unitStart - START.length);
    return units;
  }

  /** Nothing is held: no unit under way and no text. */
  get idle(): boolean {
    return this.buffer.length === 0;
  }

  /** The unit after the last start code, still open (the next start code or a pause ends it), if any. */
  peek(): Buffer | undefined {
    return this.started && this.buffer.length > START.length ? this.buffer.subarray(START.length) : undefined;
  }

  /** The unit after the last start code, taken as complete: the stream paused after it. */
  flush(): Buffer | undefined {
    if (!this.started || this.buffer.length <= START.length) return undefined;
    const unit = this.buffer.subarray(START.length);
    this.buffer = Buffer.alloc(0);
    this.started = false;
    return unit;
  }

  /** Bytes before the first start code: what a command printed instead of video (an error). */
  get text(): string {
    return this.started ? '' : this.buffer.toString('utf8');
  }
}

/** A four-byte start code leaves its leading zero on the unit before it (trailing_zero_8bits are not the unit's). */
function trimZeros(unit: Buffer): Buffer {
  let end = unit.length;
  while (end > 0 && unit[end - 1] === 0) end--;
  return unit.subarray(0, end);
}

const START_CODE = Buffer.from([0, 0, 0, 1]);
const findByte = Uint8Array.prototype.indexOf;

/**
 * Groups NAL units into access units (H.264 7.4.1.2.3): a new one begins with an AUD, SPS, PPS or SEI after a
 * picture's slices, or with a slice whose first_mb_in_slice is 0. Parameter sets are carried into the IDR access
 * unit they precede, and a keyframe without them gets the last ones seen, so that each keyframe decodes on its own.
 */
export class AccessUnitAssembler {
  private units: Buffer[] = [];
  private hasPicture = false;
  private keyframe = false;
  private sps: Buffer | undefined;
  private pps: Buffer | undefined;
  /** The last SPS's codec string, read once per SPS rather than once per picture. */
  private codec = '';

  /** Adds one NAL unit (no start code); returns the access unit it completed, if any. */
  push(unit: Buffer): AccessUnit | undefined {
    if (unit.length === 0) return undefined;
    const type = unit[0]! & 0x1f;
    const startsNew = this.hasPicture && ((type >= NAL.SEI && type <= NAL.AUD) || isFirstSlice(unit));
    const done = startsNew ? this.take() : undefined;
    if (type === NAL.SPS) {
      this.sps = unit;
      this.codec = codecOfSps(unit);
    }
    if (type === NAL.PPS) this.pps = unit;
    if (isVcl(type)) {
      this.hasPicture = true;
      if (type === NAL.IDR) this.keyframe = true;
    }
    this.units.push(unit);
    return done;
  }

  /**
   * A write that is one P picture as it stands (a four-byte start code, then one non-IDR slice that begins the picture
   * and no trailing zeros), while nothing is under way: its access unit is these very bytes. The live screen's common
   * case, 30 times a second: splitting it and copying it into a new buffer cost the engine more per picture than
   * minicap's JPEG did (a CPU profile of the relay). Anything else answers undefined, for push().
   */
  whole(write: Buffer): AccessUnit | undefined {
    const n = write.length;
    if (this.units.length > 0 || !this.sps || n < 6 || write[n - 1] === 0) return undefined;
    if (write[0] !== 0 || write[1] !== 0 || write[2] !== 0 || write[3] !== 1) return undefined;
    if ((write[4]! & 0x1f) !== NAL.SLICE || !isFirstSlice(write, 4)) return undefined;
    // Emulation prevention keeps 00 00 01 out of a unit's payload: none after the first start code means one unit.
    // The typed array's own indexOf for the 01 (Buffer's goes through a wrapper that cost more than the search).
    for (let at = findByte.call(write, 1, 6); at !== -1; at = findByte.call(write, 1, at + 1)) {
      if (write[at - 1] === 0 && write[at - 2] === 0) return undefined;
    }
    return { data: write, keyframe: false, codec: this.codec };
  }

  /** The access unit under way, taken as complete (its picture's slices have all arrived), if it has a picture. */
  flush(): AccessUnit | undefined {
    return this.hasPicture ? this.take() : undefined;
  }

  private take(): AccessUnit | undefined {
    const units = this.units;
    const keyframe = this.keyframe;
    this.units = [];
    this.hasPicture = false;
    this.keyframe = false;
    if (!this.sps) return undefined;
    let parts = units;
    if (keyframe) {
      const types = units.map((u) => u[0]! & 0x1f);
      const lead = [types.includes(NAL.SPS) ? undefined : this.sps, types.includes(NAL.PPS) ? undefined : this.pps];
      parts = [...lead.filter((u): u is Buffer => u !== undefined), ...units];
    }
    // One buffer written in place: this runs for every picture of every live screen.
    let length = 0;
    for (const unit of parts) length += START_CODE.length + unit.length;
    const data = Buffer.allocUnsafe(length);
    let at = 0;
    for (const unit of parts) {
      at += START_CODE.copy(data, at);
      at += unit.copy(data, at);
    }
    return { data, keyframe, codec: this.codec };
  }
}
