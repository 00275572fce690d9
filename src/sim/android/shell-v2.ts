import { PacketReader, PACKET, shellPacket } from '../../protocols/adb/shell-v2.js';
import type { Sink } from './shell.js';
import type { ServiceSession, StreamIo } from '../../protocols/adb/transport.js';

/** Ctrl+C, as a terminal sends it. */
const INTERRUPT = 0x03;

/** What a shell_v2 stream runs: a command with its output streams, or the interactive shell. */
export interface ShellV2Host {
  run(command: string, io: { stdout: Sink; stderr: Sink; signal: AbortSignal }): Promise<number>;
  interactive(io: StreamIo): ServiceSession;
}

/**
 * Serves `shell,v2,<args>:<command>` (args such as raw, pty, TERM=...). A command runs at once; like the v1 shell of
 * this phone, it reads no stdin (no command here reads it), so stdin packets are dropped, except that behind a PTY
 * (`pty`, as `adb shell -t` asks) Ctrl+C in them interrupts the command as the terminal's SIGINT does. With no
 * command, the interactive shell reads the stdin packets and its output goes out as stdout packets.
 */
export function openShellV2(io: StreamIo, command: string, host: ShellV2Host, pty = false): ServiceSession {
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
  const interrupt = new AbortController();
  void (async () => {
    let status = 1;
    try {
      status = await host.run(command, {
        stdout: { write: (data) => io.write(shellPacket(PACKET.stdout, data)) },
        stderr: { write: (data) => io.write(shellPacket(PACKET.stderr, data)) },
        signal: AbortSignal.any([io.signal, interrupt.signal]),
      });
    } finally {
      await io.write(shellPacket(PACKET.exit, Buffer.from([status & 0xff])));
      await io.end();
    }
  })();
  return {
    onData: (data) => {
      for (const p of reader.push(data)) if (pty && p.id === PACKET.stdin && p.data.includes(INTERRUPT)) interrupt.abort();
    },
  };
}
