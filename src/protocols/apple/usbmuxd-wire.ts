import type { Socket } from 'node:net';
import { decodePlist, encodePlist, type PlistDict } from './plist-wire.js';

/**
 * usbmuxd's wire format, as Apple's daemon and libimobiledevice's speak it: 16-byte little-endian headers (length,
 * version, message type, tag), then an XML plist. Protocol version 1, message type 8 ("plist"); the binary version 0
 * was retired with iOS 6-era clients. Written once for every usbmuxd Benchtop serves: the simulated one and the
 * engine's private one per held iPhone.
 */

export const MUX_HEADER = 16;
export const MUX_VERSION_PLIST = 1;
export const MUX_TYPE_PLIST = 8;
export const MUX_RESULT = { OK: 0, BADCOMMAND: 1, BADDEV: 2, CONNREFUSED: 3, BADVERSION: 6 } as const;
/** The largest request a client sends (a SavePairRecord): anything longer is not usbmuxd talking. */
const MAX_MESSAGE = 1024 * 1024;

/** PortNumber travels in network byte order inside the plist, a quirk every client reproduces. */
export const swap16 = (n: number) => ((n & 0xff) << 8) | ((n >> 8) & 0xff);

export function muxResult(number: number): PlistDict {
  return { MessageType: 'Result', Number: number };
}

export function encodeMuxMessage(tag: number, payload: PlistDict): Buffer {
  return muxFrame(tag, encodePlist(payload));
}

/** A usbmuxd frame (version 1, type 8: plist) around a body already encoded, or any bytes at all. */
export function muxFrame(tag: number, body: Buffer): Buffer {
  const header = Buffer.alloc(MUX_HEADER);
  header.writeUInt32LE(MUX_HEADER + body.length, 0);
  header.writeUInt32LE(MUX_VERSION_PLIST, 4);
  header.writeUInt32LE(MUX_TYPE_PLIST, 8);
  header.writeUInt32LE(tag, 12);
  return Buffer.concat([header, body]);
}

export function sendMux(socket: Socket, tag: number, payload: PlistDict): void {
  if (socket.writable) socket.write(encodeMuxMessage(tag, payload));
}

/** A usbmuxd's side of one client connection. */
export interface MuxServerHandler {
  /** Every request but Connect; answers with `reply` (now or later). */
  request(request: PlistDict, reply: (payload: PlistDict) => void): void;
  /**
   * Connect: answer with `reply`, and once the tunnel is granted call `handOver()`, after which the socket's bytes are
   * the phone's (bytes the client already sent are put back). Resolve true when handed over.
   */
  connect(request: PlistDict, reply: (payload: PlistDict) => void, handOver: () => void): Promise<boolean> | boolean;
}

/** How a usbmuxd guards itself against a client that is not one. */
export interface MuxServeLimits {
  /**
   * A connection that has not sent a whole request this long after it opened, or that has held part of one this long,
   * is closed (a half-sent header). One that has sent its requests may wait for more, or for events, as long as it likes.
   */
  idleMs?: number;
  /**
   * Requests awaiting their reply at once; beyond, the connection is not read until one is answered. Nor is it while
   * the client leaves its replies unread.
   */
  inFlight?: number;
}

/** Far more than any client has in flight: libusbmuxd waits for each reply, appium-ios-device for a few. */
const IN_FLIGHT = 16;

/**
 * Serves one client connection: frames, decodes, and hands each request to `handler`, in order. A frame over 1 MB or
 * a plist over its limits is answered BADCOMMAND where it can be and the connection closed.
 */
export function serveMuxClient(socket: Socket, handler: MuxServerHandler, limits: MuxServeLimits = {}): void {
  const maxInFlight = limits.inFlight ?? IN_FLIGHT;
  let pending: Buffer = Buffer.alloc(0);
  let busy = false;
  let inFlight = 0;
  let handedOver = false;
  let draining = false;
  let deadline: NodeJS.Timeout | undefined;
  const arm = () => {
    if (deadline || limits.idleMs === undefined) return;
    deadline = setTimeout(() => socket.destroy(), limits.idleMs);
    deadline.unref();
  };
  const disarm = () => {
    clearTimeout(deadline);
    deadline = undefined;
  };
  const pump = async () => {
    if (busy) return;
    busy = true;
    try {
      while (!handedOver && !socket.destroyed) {
        if (inFlight >= maxInFlight) return void socket.pause();
        // A client that does not read its answers is not read either: nothing piles up for it here.
        if (socket.writableNeedDrain) {
          socket.pause();
          if (!draining) {
            draining = true;
            socket.once('drain', () => ((draining = false), proceed()));
          }
          return;
        }
        if (pending.length < MUX_HEADER) break;
        const length = pending.readUInt32LE(0);
        if (length < MUX_HEADER || length > MAX_MESSAGE) return void socket.destroy();
        if (pending.length < length) break;
        disarm();
        const version = pending.readUInt32LE(4);
        const type = pending.readUInt32LE(8);
        const tag = pending.readUInt32LE(12);
        const body = pending.subarray(MUX_HEADER, length);
        pending = pending.subarray(length);
        if (version !== MUX_VERSION_PLIST || type !== MUX_TYPE_PLIST) {
          sendMux(socket, tag, muxResult(MUX_RESULT.BADVERSION));
          continue;
        }
        let request: PlistDict;
        try {
          request = decodePlist(body);
        } catch {
          socket.end(encodeMuxMessage(tag, muxResult(MUX_RESULT.BADCOMMAND)), () => socket.destroy());
          return;
        }
        let answered = false;
        inFlight++;
        const reply = (payload: PlistDict) => {
          // Once tunnelled, the socket carries the phone's bytes only: a late answer to an earlier request is dropped.
          if (handedOver) return;
          sendMux(socket, tag, payload);
          if (answered) return;
          answered = true;
          if (inFlight-- === maxInFlight) proceed();
        };
        if (request.MessageType === 'Connect') {
          const handOver = () => {
            handedOver = true;
            socket.off('data', onData);
            // Bytes the client sent after Connect already belong to the tunnel.
            if (pending.length) socket.unshift(pending);
            pending = Buffer.alloc(0);
          };
          if (await handler.connect(request, reply, handOver)) return;
          continue;
        }
        handler.request(request, reply);
      }
      if (pending.length) arm();
    } finally {
      busy = false;
    }
  };
  const proceed = () => {
    if (handedOver) return;
    socket.resume();
    void pump();
  };
  const onData = (chunk: Buffer) => {
    pending = pending.length ? Buffer.concat([pending, chunk]) : chunk;
    void pump();
  };
  arm();
  socket.once('close', disarm);
  socket.on('data', onData);
}

/**
 * Reads usbmuxd messages from a daemon (a client's side): each whole message's tag and plist, in order. A message over
 * 1 MB, or a plist over its limits, throws: the connection is not usbmuxd's.
 */
export class MuxReader {
  private pending: Buffer = Buffer.alloc(0);

  push(chunk: Buffer): Array<{ tag: number; message: PlistDict }> {
    this.pending = this.pending.length ? Buffer.concat([this.pending, chunk]) : chunk;
    const out: Array<{ tag: number; message: PlistDict }> = [];
    while (this.pending.length >= MUX_HEADER) {
      const length = this.pending.readUInt32LE(0);
      if (length < MUX_HEADER || length > MAX_MESSAGE) throw new Error(`usbmuxd sent a ${length}-byte message`);
      if (this.pending.length < length) break;
      out.push({ tag: this.pending.readUInt32LE(12), message: decodePlist(this.pending.subarray(MUX_HEADER, length)) });
      this.pending = this.pending.subarray(length);
    }
    return out;
  }

  /** What came after the last whole message (a tunnel's first bytes). */
  rest(): Buffer {
    const rest = this.pending;
    this.pending = Buffer.alloc(0);
    return rest;
  }
}
