/**
 * adbd's shell protocol (the `shell_v2` feature), written once for both sides: the engine's phone shell and the
 * simulated phone. Instead of raw bytes, each message on the stream is a packet: an id byte, a 4-byte little-endian
 * length, then that many bytes. It carries stdout and stderr apart, the terminal's size, and ends with the command's
 * exit status (which is how `adb shell false` exits 1 on a real phone; shell v1 always 0).
 */
export const PACKET = { stdin: 0, stdout: 1, stderr: 2, exit: 3, closeStdin: 4, windowSizeChange: 5 } as const;

export function shellPacket(id: number, data: Buffer | string): Buffer {
  const body = typeof data === 'string' ? Buffer.from(data, 'utf8') : data;
  const header = Buffer.alloc(5);
  header.writeUInt8(id, 0);
  header.writeUInt32LE(body.length, 1);
  return Buffer.concat([header, body]);
}

/** A window-size-change packet's body, as adb's client writes it: "<rows>x<cols>,<xpixels>x<ypixels>" and a NUL. */
export const windowSize = (rows: number, cols: number): string => `${rows}x${cols},0x0\0`;

/** Reassembles packets, which the transport may split or join. */
export class PacketReader {
  private pending: Buffer = Buffer.alloc(0);

  push(data: Buffer): Array<{ id: number; data: Buffer }> {
    this.pending = this.pending.length === 0 ? data : Buffer.concat([this.pending, data]);
    const out: Array<{ id: number; data: Buffer }> = [];
    while (this.pending.length >= 5) {
      const length = this.pending.readUInt32LE(1);
      if (this.pending.length < 5 + length) break;
      out.push({ id: this.pending[0]!, data: this.pending.subarray(5, 5 + length) });
      this.pending = this.pending.subarray(5 + length);
    }
    return out;
  }
}
