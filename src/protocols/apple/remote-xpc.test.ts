import { once } from 'node:events';
import { connect, createServer, type AddressInfo, type Server, type Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { H2, MAX_INBOUND_FRAME, RemoteXpcConnection, REPLY_CHANNEL, ROOT_CHANNEL } from './remote-xpc.js';
import { encodeXpcMessage, readXpcMessage, XPC_FLAGS, type XpcMessage } from './xpc.js';

const PREFACE = Buffer.from('PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n', 'latin1');

function frame(type: number, flags: number, stream: number, payload: Buffer = Buffer.alloc(0), declared = payload.length): Buffer {
  const head = Buffer.alloc(9);
  head.writeUIntBE(declared, 0, 3);
  head[3] = type;
  head[4] = flags;
  head.writeUInt32BE(stream, 5);
  return Buffer.concat([head, payload]);
}

interface Frame {
  type: number;
  flags: number;
  stream: number;
  payload: Buffer;
}

/** The host's side, written from RFC 9113 and go-ios's ios/http, not with remote-xpc.ts. */
class Host {
  frames: Frame[] = [];
  messages: Array<XpcMessage & { stream: number }> = [];
  private pending = Buffer.alloc(0);
  private readonly data = new Map<number, Buffer>();
  closed: Promise<void>;
  constructor(readonly socket: Socket) {
    socket.on('data', (chunk: Buffer) => {
      this.pending = Buffer.concat([this.pending, chunk]);
      while (this.pending.length >= 9) {
        const length = this.pending.readUIntBE(0, 3);
        if (this.pending.length < 9 + length) break;
        const f = { type: this.pending[3]!, flags: this.pending[4]!, stream: this.pending.readUInt32BE(5), payload: this.pending.subarray(9, 9 + length) };
        this.pending = this.pending.subarray(9 + length);
        this.frames.push(f);
        if (f.type !== H2.DATA) continue;
        let buffered = Buffer.concat([this.data.get(f.stream) ?? Buffer.alloc(0), f.payload]);
        for (let read = readXpcMessage(buffered); read; read = readXpcMessage(buffered)) {
          this.messages.push({ ...read.message, stream: f.stream });
          buffered = buffered.subarray(read.length);
        }
        this.data.set(f.stream, buffered);
      }
    });
    this.closed = once(socket, 'close').then(() => undefined);
  }
  async until<T>(find: () => T | undefined, ms = 2000): Promise<T> {
    const deadline = Date.now() + ms;
    for (;;) {
      const found = find();
      if (found !== undefined) return found;
      if (Date.now() > deadline) throw new Error('timed out');
      await new Promise((r) => setTimeout(r, 5));
    }
  }
  send(bytes: Buffer): void {
    this.socket.write(bytes);
  }
  /** go-ios's opening: preface, SETTINGS, WINDOW_UPDATE. */
  open(): void {
    const settings = Buffer.alloc(12);
    settings.writeUInt16BE(3, 0);
    settings.writeUInt32BE(100, 2);
    settings.writeUInt16BE(4, 6);
    settings.writeUInt32BE(1048576, 8);
    const increment = Buffer.alloc(4);
    increment.writeUInt32BE(983041);
    this.send(Buffer.concat([PREFACE, frame(H2.SETTINGS, 0, 0, settings), frame(H2.WINDOW_UPDATE, 0, 0, increment)]));
  }
  message(stream: number, flags: number, body?: XpcMessage['body'], headers = false): void {
    const data = frame(H2.DATA, 0, stream, encodeXpcMessage({ flags, id: 0n, ...(body !== undefined ? { body } : {}) }));
    this.send(headers ? Buffer.concat([frame(H2.HEADERS, 0x4, stream), data]) : data);
  }
  goaway(): number | undefined {
    const f = this.frames.find((x) => x.type === H2.GOAWAY);
    return f?.payload.readUInt32BE(4);
  }
}

describe('RemoteXPC over HTTP/2, the phone side', () => {
  let server: Server;
  const served: Array<{ conn: RemoteXpcConnection; errors: Error[]; requests: Array<XpcMessage & { stream: number }> }> = [];
  const hosts: Host[] = [];

  beforeAll(async () => {
    server = createServer((socket) => {
      const entry = { errors: [] as Error[], requests: [] as Array<XpcMessage & { stream: number }>, conn: undefined as unknown as RemoteXpcConnection };
      entry.conn = new RemoteXpcConnection(
        socket,
        (message, conn) => {
          entry.requests.push(message);
          conn.reply(message, { echo: message.body ?? null });
        },
        { onError: (e) => entry.errors.push(e) },
      );
      served.push(entry);
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  });
  afterAll(async () => {
    for (const host of hosts) host.socket.destroy();
    await new Promise((r) => server.close(r));
  });

  async function host(): Promise<{ host: Host; served: (typeof served)[number] }> {
    const socket = connect((server.address() as AddressInfo).port, '127.0.0.1');
    await once(socket, 'connect');
    const h = new Host(socket);
    hosts.push(h);
    await h.until(() => (served.length === hosts.length ? true : undefined));
    return { host: h, served: served[hosts.length - 1]! };
  }

  it("answers go-ios's opening step by step, then requests on the ROOT_CHANNEL on the REPLY_CHANNEL with their id", async () => {
    const { host: h, served: s } = await host();
    h.open();
    // The phone's SETTINGS come first (go-ios reads exactly one frame and wants SETTINGS), then its window.
    await h.until(() => (h.frames.length >= 2 ? true : undefined));
    expect(h.frames[0]!.type).toBe(H2.SETTINGS);
    expect(h.frames[0]!.payload.readUInt32BE(8)).toBe(1048576);
    expect(h.frames[1]!.type).toBe(H2.WINDOW_UPDATE);
    await h.until(() => h.frames.find((f) => f.type === H2.SETTINGS && f.flags & 1));

    h.message(ROOT_CHANNEL, XPC_FLAGS.ALWAYS_SET, {}, true);
    const first = await h.until(() => h.messages[0]);
    expect(first).toEqual({ stream: ROOT_CHANNEL, flags: XPC_FLAGS.ALWAYS_SET, id: 0n, body: {} });
    h.message(REPLY_CHANNEL, XPC_FLAGS.ALWAYS_SET | XPC_FLAGS.INIT_HANDSHAKE, undefined, true);
    expect(await h.until(() => h.messages[1])).toEqual({ stream: REPLY_CHANNEL, flags: 0x400001, id: 0n });
    let ready = false;
    s.conn.onReady(() => (ready = true));
    expect(ready).toBe(false);
    h.message(ROOT_CHANNEL, 0x201);
    expect(await h.until(() => h.messages[2])).toEqual({ stream: ROOT_CHANNEL, flags: 0x201, id: 1n });
    expect(ready).toBe(true);

    // A request split into 1-byte DATA frames, and two requests in one frame.
    const request = encodeXpcMessage({ flags: 0x10101, id: 5n, body: { 'CoreDevice.featureIdentifier': 'x' } });
    h.send(Buffer.concat([...request].map((byte) => frame(H2.DATA, 0, ROOT_CHANNEL, Buffer.from([byte])))));
    const two = Buffer.concat([encodeXpcMessage({ flags: 0x10101, id: 6n, body: { n: 'six' } }), encodeXpcMessage({ flags: 0x10101, id: 7n, body: { n: 'seven' } })]);
    h.send(frame(H2.DATA, 0, ROOT_CHANNEL, two));
    await h.until(() => (h.messages.length >= 6 ? true : undefined));
    expect(h.messages.slice(3).map((m) => [m.stream, m.flags, m.id, m.body])).toEqual([
      [REPLY_CHANNEL, 0x20101, 5n, { echo: { 'CoreDevice.featureIdentifier': 'x' } }],
      [REPLY_CHANNEL, 0x20101, 6n, { echo: { n: 'six' } }],
      [REPLY_CHANNEL, 0x20101, 7n, { echo: { n: 'seven' } }],
    ]);
    // PING is answered; the window the host's DATA used is granted back once 64 KB were used.
    h.send(frame(H2.PING, 0, 0, Buffer.from('12345678')));
    await h.until(() => h.frames.find((f) => f.type === H2.PING && f.flags & 1 && f.payload.toString() === '12345678'));
    h.send(frame(H2.DATA, 0, ROOT_CHANNEL, encodeXpcMessage({ flags: 0x10101, id: 8n, body: { big: Buffer.alloc(70_000) } })));
    await h.until(() => h.frames.find((f) => f.type === H2.WINDOW_UPDATE && f.stream === ROOT_CHANNEL));
    expect(s.errors).toEqual([]);
  });

  it('pymobiledevice3 and devicectl send 0x201 before INIT_HANDSHAKE without waiting: answered the same', async () => {
    const { host: h } = await host();
    h.open();
    h.message(ROOT_CHANNEL, XPC_FLAGS.ALWAYS_SET, {}, true);
    h.send(frame(H2.HEADERS, 0x4, REPLY_CHANNEL));
    h.message(ROOT_CHANNEL, 0x201);
    h.message(REPLY_CHANNEL, XPC_FLAGS.ALWAYS_SET | XPC_FLAGS.INIT_HANDSHAKE);
    await h.until(() => (h.messages.length >= 3 ? true : undefined));
    expect(h.messages.map((m) => [m.stream, m.flags])).toEqual([[1, 1], [1, 0x201], [3, 0x400001]]);
  });

  describe('a hostile host gets GOAWAY and a closed connection, and the phone keeps serving others', () => {
    const cases: Array<[string, (h: Host) => void, number | undefined, RegExp]> = [
      ['no HTTP/2 preface', (h) => h.send(Buffer.from('GET / HTTP/1.1\r\nHost: x\r\n\r\n')), 1, /preface/],
      ['a frame header declaring 16 MB', (h) => { h.open(); h.send(frame(H2.DATA, 0, 1, Buffer.alloc(0), 0xffffff)); }, 6, /over 1048576/],
      ['an XPC message declaring 2^62 bytes', (h) => {
        h.open();
        const head = encodeXpcMessage({ flags: 1, id: 0n });
        head.writeBigUInt64LE(2n ** 62n, 8);
        h.send(frame(H2.DATA, 0, 1, head));
      }, 1, /declares/],
      ['an XPC message that is not one', (h) => { h.open(); h.send(frame(H2.DATA, 0, 1, Buffer.from('not xpc at all, just text'))); }, 1, /Not an XPC message/],
      ['nesting 10^4 deep', (h) => {
        h.open();
        const levels = Buffer.alloc(10_000 * 12);
        for (let i = 0; i < 10_000; i++) {
          levels.writeUInt32LE(0xe000, i * 12);
          levels.writeUInt32LE(4, i * 12 + 4);
          levels.writeUInt32LE(1, i * 12 + 8);
        }
        const body = Buffer.concat([Buffer.from([0x42, 0x37, 0x13, 0x42, 5, 0, 0, 0]), levels, Buffer.from([0, 0x10, 0, 0])]);
        const head = encodeXpcMessage({ flags: 1, id: 0n });
        head.writeBigUInt64LE(BigInt(body.length), 8);
        h.send(frame(H2.DATA, 0, 1, Buffer.concat([head, body])));
      }, 1, /nests too deeply/],
      ['DATA on stream 0', (h) => { h.open(); h.send(frame(H2.DATA, 0, 0, Buffer.from('x'))); }, 1, /stream 0/],
      ['a request before the init handshake', (h) => { h.open(); h.message(REPLY_CHANNEL, 0x10101, { a: 'b' }); }, 1, /init handshake/],
      ['a malformed SETTINGS', (h) => { h.open(); h.send(frame(H2.SETTINGS, 0, 0, Buffer.alloc(5))); }, 1, /SETTINGS/],
    ];
    for (const [what, attack, code, why] of cases) {
      it(what, async () => {
        const { host: h, served: s } = await host();
        attack(h);
        await h.closed;
        expect(h.goaway()).toBe(code);
        expect(s.errors.map((e) => e.message).join()).toMatch(why);
      });
    }

    it('a frame trickled in and never finished holds at most one frame of memory', async () => {
      const { host: h, served: s } = await host();
      h.open();
      h.send(frame(H2.DATA, 0, 1, Buffer.alloc(0), MAX_INBOUND_FRAME));
      for (let i = 0; i < 16; i++) h.send(Buffer.alloc(64 * 1024 - (i === 15 ? 1 : 0)));
      const held = () => (s.conn as unknown as { pending: { length: number } }).pending.length;
      await h.until(() => (held() === 9 + MAX_INBOUND_FRAME - 1 ? true : undefined));
      expect(h.socket.destroyed).toBe(false);
      h.socket.destroy();
    });
  });
});
