import { createServer, connect, type Server, type Socket } from 'node:net';

/**
 * A phone's USB cable, as a TCP relay between the adb server and a simulated phone that moves each direction's bytes
 * no faster than `bytesPerSecond` (Infinity: as fast as the relay can). A simulated phone answers from memory at
 * several hundred MB/s, far beyond a real phone's USB link; benchmarks whose figure depends on the phone's transfer
 * rate (push, pull, install) measure through this at a published real-phone rate as well. It models the link's rate
 * only, not USB's per-transfer latency, so figures through it are if anything kinder to the direct path.
 */
export interface UsbLink {
  /** The port the adb server connects to instead of the phone's. */
  port: number;
  /** Changes the rate for bytes sent from now on. */
  setRate(bytesPerSecond: number): void;
  close(): Promise<void>;
}

/** Published: a Pixel 3 (blueline) pushes 125 MB/s over USB 3.0 and 36 MB/s over USB 2.0 (AOSP adb commit 2f0f9eb). */
export const USB3_PUSH_BYTES_PER_SECOND = 125e6;

export async function startUsbLink(phonePort: number): Promise<UsbLink> {
  let rate = Infinity;
  const sockets = new Set<Socket>();
  const server: Server = createServer((host) => {
    const phone = connect({ host: '127.0.0.1', port: phonePort });
    for (const s of [host, phone]) {
      s.setNoDelay(true);
      sockets.add(s);
      s.on('error', () => undefined);
      s.on('close', () => {
        sockets.delete(s);
        host.destroy();
        phone.destroy();
      });
    }
    relay(host, phone);
    relay(phone, host);
  });

  /** Copies `from` to `to`; when the bytes so far would still be on the wire at `rate`, reading waits until they are not. */
  function relay(from: Socket, to: Socket): void {
    let wireFreeAt = 0;
    // Reading waits while either holds: the far side's buffer is full, or the wire is still busy.
    let holds = 0;
    const hold = () => void (holds++ === 0 && from.pause());
    const letGo = () => void (--holds === 0 && from.resume());
    from.on('data', (chunk: Buffer) => {
      if (!to.write(chunk)) {
        hold();
        to.once('drain', letGo);
      }
      if (rate === Infinity) return;
      const now = performance.now();
      wireFreeAt = Math.max(now, wireFreeAt) + (chunk.length / rate) * 1000;
      const ahead = wireFreeAt - now;
      // Below a millisecond, a timer would cost more than it models.
      if (ahead < 1) return;
      hold();
      setTimeout(letGo, ahead);
    });
  }

  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  return {
    port: (server.address() as { port: number }).port,
    setRate: (bytesPerSecond) => void (rate = bytesPerSecond),
    close: () =>
      new Promise((resolve) => {
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
  };
}
