import type { Sink } from './shell.js';
import type { ServiceSession, StreamIo } from '../../protocols/adb/transport.js';

/**
 * adbd's shell protocol (the `shell_v2` feature): instead of raw bytes, each message on the stream is a packet,
 * an id byte, a 4-byte little-endian length, then that many bytes. It carries stdout and stderr apart and ends
 * with the command's exit status, which is how `adb shell false` exits 1 on a real phone (shell v1 always 0).
 */
export const PACKET = { stdin: 0, stdout: 1, stderr: 2, exit: 3, closeStdin: 4, windowSizeChange: 5 } as const;

export function shellPacket(id: number, data: Buffer | string): Buffer {
  const body = typeof data === 'string' ? Buffer.from(data, 'utf8') : data;
  const header = Buffer.alloc(5);
  header.writeUInt8(id, 0);
  header.writeUInt32LE(body.length, 1);
  return Buffer.concat([header, body]);
}

/** Reassembles the host's packets, which a WRTE may split or join. */
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

/** What a shell_v2 stream runs: a command with its output streams, or the interactive shell. */
export interface ShellV2Host {
  run(command: string, io: { stdout: Sink; stderr: Sink; signal: AbortSignal }): Promise<number>;
  interactive(io: StreamIo): ServiceSession;
}

/**
 * Serves `shell,v2,<args>:<command>` (args such as raw, pty, TERM=...). A command runs at once; like the v1 shell of
 * this phone, it reads no stdin (no command here reads it), so stdin packets are accepted and dropped. With no
 * command, the interactive shell reads the stdin packets and its output goes out as stdout packets.
 */
export function openShellV2(io: StreamIo, command: string, host: ShellV2Host): ServiceSession {
  const reader = new PacketReader();
  if (command === '') {
    // The interactive shell writes through an io that frames its output and ends with an exit packet.
    const framed: StreamIo = {
      write: (data) => io.write(shellPacket(PACKET.stdout, data)),
      end: async () => {
        await io.write(shellPacket(PACKET.exit, Buffer.from([0])));
        await io.end();
      },
      get signal() {
        return io.signal;
      },
    };
    const inner = host.interactive(framed);
    return {
      onData: async (data) => {
        for (const p of reader.push(data)) {
          if (p.id === PACKET.stdin) await inner.onData?.(p.data);
          else if (p.id === PACKET.closeStdin) await framed.end();
        }
      },
      onClose: () => inner.onClose?.(),
    };
  }
  void (async () => {
    let status = 1;
    try {
      status = await host.run(command, {
        stdout: { write: (data) => io.write(shellPacket(PACKET.stdout, data)) },
        stderr: { write: (data) => io.write(shellPacket(PACKET.stderr, data)) },
        signal: io.signal,
      });
    } finally {
      await io.write(shellPacket(PACKET.exit, Buffer.from([status & 0xff])));
      await io.end();
    }
  })();
  return { onData: (data) => void reader.push(data) };
}
