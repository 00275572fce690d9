import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import {
  decodeXpcMessage, decodeXpcObject, encodeXpcMessage, encodeXpcObject, readXpcMessage, XPC_FLAGS, XPC_LIMITS, XPC_TYPE, XpcDate, XpcError, XpcInt64,
  XpcUint64, XpcUuid, type XpcValue,
} from './xpc.js';

/** Messages go-ios 1.2.0 wrote (its ios/xpc test vectors, MIT): an empty dictionary, and a launchapplication request. */
const fixture = (name: string) => readFileSync(new URL(`../../../test/support/fixtures/xpc/${name}`, import.meta.url));

const u32 = (...values: number[]) => Buffer.concat(values.map((v) => { const b = Buffer.alloc(4); b.writeUInt32LE(v >>> 0); return b; }));
/** A wrapper around a body object, as a peer would send it, declaring `declared` bytes of body when given. */
function wrap(object: Buffer, declared?: bigint): Buffer {
  const head = Buffer.alloc(24);
  head.writeUInt32LE(0x29b00b92, 0);
  head.writeUInt32LE(XPC_FLAGS.ALWAYS_SET | XPC_FLAGS.DATA_PRESENT, 4);
  head.writeBigUInt64LE(declared ?? BigInt(object.length + 8), 8);
  return Buffer.concat([head, u32(0x42133742, 5), object]);
}

describe('XPC codec', () => {
  it("reads go-ios's own messages: an empty dictionary and a launchapplication request, typed as go-ios typed them", () => {
    expect(decodeXpcMessage(fixture('go-ios-empty-dict.bin'))).toEqual({ flags: XPC_FLAGS.ALWAYS_SET, id: 0n, body: {} });

    const launch = decodeXpcMessage(fixture('go-ios-launchapplication.bin'));
    expect(launch.flags).toBe(XPC_FLAGS.ALWAYS_SET | XPC_FLAGS.DATA_PRESENT | XPC_FLAGS.WANTING_REPLY);
    expect(launch.id).toBe(1n);
    const body = launch.body as Record<string, any>;
    expect(body['CoreDevice.featureIdentifier']).toBe('com.apple.coredevice.feature.launchapplication');
    expect(body['CoreDevice.CoreDeviceDDIProtocolVersion']).toEqual(new XpcInt64(0));
    expect(body['CoreDevice.coreDeviceVersion']).toEqual({
      components: [new XpcUint64(0x15c), new XpcUint64(1), new XpcUint64(0), new XpcUint64(0), new XpcUint64(0)],
      originalComponentsCount: new XpcInt64(2),
      stringValue: '348.1',
    });
    const options = body['CoreDevice.input'].options;
    expect(body['CoreDevice.input'].applicationSpecifier.bundleIdentifier._0).toBe('xxx.xxxxxxxxx.xxxxxxxx');
    expect(options.environmentVariables).toEqual({ TERM: 'xterm-256color' });
    expect(options.arguments).toEqual([]);
    expect(options.workingDirectory).toBeNull();
    expect([options.standardIOUsesPseudoterminals, options.startStopped, options.terminateExisting]).toEqual([true, false, false]);
    expect(options.platformSpecificOptions).toEqual(Buffer.from('YnBsaXN0MDDQCAAAAAAAAAEBAAAAAAAAAAEAAAAAAAAAAAAAAAAAAAAJ', 'base64'));
    // Encoding what was decoded gives the same bytes back (same key order, same padding, Apple's array length).
    expect(encodeXpcMessage(launch).equals(fixture('go-ios-launchapplication.bin'))).toBe(true);
  });

  it('round-trips every type, with strings and keys at each padding and a bare (bodiless) message', () => {
    const value: XpcValue = {
      a: 'x',
      bb: 'xy',
      ccc: 'xyz',
      dddd: 'xyzw',
      unicode: 'iPhone de Zoë ☃ 𝄞',
      empty: '',
      data: Buffer.from([1, 2, 3, 4, 5]),
      emptyData: Buffer.alloc(0),
      yes: true,
      no: false,
      nothing: null,
      double: 1.25,
      int: new XpcInt64(-5),
      bigInt: new XpcInt64(-(2n ** 63n)),
      uint: new XpcUint64(2n ** 64n - 1n),
      uuid: new XpcUuid('A7DD28AC-2911-4549-811D-85917B9AC72F'),
      date: new XpcDate(1_764_000_000_000_000_000n),
      list: [new XpcInt64(1), 'two', [{ three: [] }], {}],
    };
    expect(decodeXpcObject(encodeXpcObject(value))).toEqual(value);
    const bare = encodeXpcMessage({ flags: XPC_FLAGS.ALWAYS_SET | XPC_FLAGS.INIT_HANDSHAKE, id: 7n });
    expect(bare.length).toBe(24);
    expect(decodeXpcMessage(bare)).toEqual({ flags: 0x400001, id: 7n });
  });

  it('a "__proto__" key is a plain key, not a prototype', () => {
    const decoded = decodeXpcObject(Buffer.concat([u32(XPC_TYPE.DICTIONARY, 24, 1), Buffer.from('__proto__\0\0\0'), u32(XPC_TYPE.BOOL, 1)])) as Record<string, unknown>;
    expect(Object.getPrototypeOf(decoded)).toBe(Object.prototype);
    expect(Object.keys(decoded)).toEqual(['__proto__']);
  });

  it('reads a message across chunks: undefined until whole, then the message and its length', () => {
    const whole = Buffer.concat([fixture('go-ios-launchapplication.bin'), fixture('go-ios-empty-dict.bin')]);
    expect(readXpcMessage(whole.subarray(0, 3))).toBeUndefined();
    expect(readXpcMessage(whole.subarray(0, 500))).toBeUndefined();
    const first = readXpcMessage(whole)!;
    expect(first.length).toBe(1076);
    expect(readXpcMessage(whole.subarray(first.length))!.message.body).toEqual({});
  });

  describe('hostile input is an XpcError, never a crash or an allocation the bytes do not back', () => {
    const refused: Array<[string, () => unknown, RegExp]> = [
      ['bad wrapper magic', () => readXpcMessage(Buffer.from('GET / HTTP/1.1\r\n\r\n')), /Not an XPC message/],
      ['a declared body of 2^63 bytes', () => readXpcMessage(wrap(Buffer.alloc(0), 2n ** 63n)), /declares/],
      ['a declared body of 5 MB', () => readXpcMessage(wrap(Buffer.alloc(0), 5_000_000n)), /over 4194304/],
      ['a body shorter than its header', () => readXpcMessage(wrap(Buffer.alloc(0), 4n).subarray(0, 28)), /shorter/],
      ['bad object magic', () => decodeXpcMessage(Buffer.concat([wrap(Buffer.alloc(0)).subarray(0, 24), u32(0xdeadbeef, 5, XPC_TYPE.NULL)])), /bad magic/],
      ['a string claiming 4 GB', () => decodeXpcMessage(wrap(u32(XPC_TYPE.STRING, 0xffffffff))), /truncated/],
      ['data claiming 1 GB', () => decodeXpcMessage(wrap(u32(XPC_TYPE.DATA, 1 << 30, 0))), /truncated/],
      ['an array claiming 2^32-1 entries', () => decodeXpcMessage(wrap(u32(XPC_TYPE.ARRAY, 4, 0xffffffff))), /claims 4294967295 entries/],
      ['a dictionary whose length runs past the end', () => decodeXpcMessage(wrap(u32(XPC_TYPE.DICTIONARY, 1000, 0))), /truncated/],
      ['a key with no NUL', () => decodeXpcMessage(wrap(Buffer.concat([u32(XPC_TYPE.DICTIONARY, 12, 1), Buffer.from('abcdefgh')]))), /no end/],
      ['an unknown type', () => decodeXpcMessage(wrap(u32(0x77000))), /Unknown XPC object type 0x77000/],
      ['a truncated int64', () => decodeXpcMessage(wrap(u32(XPC_TYPE.INT64, 1))), /truncated/],
      ['stray bytes after the object', () => decodeXpcMessage(wrap(u32(XPC_TYPE.NULL, 0))), /stray/],
      ['a message cut short', () => decodeXpcMessage(fixture('go-ios-launchapplication.bin').subarray(0, 1000)), /truncated/],
    ];
    for (const [what, decode, error] of refused) {
      it(what, () => {
        expect(decode).toThrow(XpcError);
        expect(decode).toThrow(error);
      });
    }

    it('nesting deeper than maxDepth is refused without exhausting the stack; 10^5 levels take milliseconds', () => {
      const levels = 100_000;
      // [[[[...]]]]: each level an array of one, the lengths left at 4 (never relied on), 12 bytes a level.
      const nested = Buffer.concat([Buffer.alloc(levels * 12), u32(XPC_TYPE.NULL)]);
      for (let i = 0; i < levels; i++) {
        nested.writeUInt32LE(XPC_TYPE.ARRAY, i * 12);
        nested.writeUInt32LE(4, i * 12 + 4);
        nested.writeUInt32LE(1, i * 12 + 8);
      }
      const started = performance.now();
      expect(() => decodeXpcObject(nested)).toThrow(/nests too deeply/);
      // Milliseconds alone; room for a loaded machine's pauses, as plist-wire's bomb test leaves.
      expect(performance.now() - started).toBeLessThan(1000);
      // At the limit itself it decodes.
      const atLimit = Buffer.concat([...Array.from({ length: XPC_LIMITS.maxDepth }, () => u32(XPC_TYPE.ARRAY, 4, 1)), u32(XPC_TYPE.NULL)]);
      expect(() => decodeXpcObject(atLimit)).not.toThrow();
    });

    it('more objects than maxObjects are refused', () => {
      const many = Buffer.concat([u32(XPC_TYPE.ARRAY, 4 + 4 * 200, 200), ...Array.from({ length: 200 }, () => u32(XPC_TYPE.NULL))]);
      expect(() => decodeXpcObject(many, { ...XPC_LIMITS, maxObjects: 100 })).toThrow(/more than 100 objects/);
      expect((decodeXpcObject(many) as unknown[]).length).toBe(200);
    });

    it('5,000 random mutations of a real message each decode or fail with an XpcError', () => {
      const original = fixture('go-ios-launchapplication.bin');
      let seed = 42;
      const random = () => ((seed = (seed * 1103515245 + 12345) & 0x7fffffff) / 0x7fffffff);
      let failures = 0;
      const others: unknown[] = [];
      for (let i = 0; i < 5_000; i++) {
        const bytes = Buffer.from(original);
        for (let j = 0; j < 1 + Math.floor(random() * 4); j++) bytes[Math.floor(random() * bytes.length)] = Math.floor(random() * 256);
        const cut = random() < 0.2 ? bytes.subarray(0, Math.floor(random() * bytes.length)) : bytes;
        try {
          decodeXpcMessage(cut);
        } catch (error) {
          if (error instanceof XpcError) failures++;
          else others.push(error);
        }
      }
      expect(others).toEqual([]);
      expect(failures).toBeGreaterThan(250);
    });
  });
});
