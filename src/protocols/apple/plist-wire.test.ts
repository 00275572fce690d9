import { build, buildBinary, parse, parseBinary, type PlistValue } from 'plist';
import { describe, expect, it } from 'vitest';
import { sharedReferencePlist } from '../../../test/support/bplist.js';
import { decodePlist, PlistLimitError } from './plist-wire.js';

/** What usbmuxd, lockdownd and appium-ios-device put in their plists, and the edges of each binary type. */
const ordinary = {
  MessageType: 'Attached',
  DeviceID: 7,
  Properties: { ConnectionSpeed: 480000000, LocationID: 0x14100003, ProductID: 0x12a8, SerialNumber: '00008110-001A2B3C4D5E6F70' },
  PairRecordData: Buffer.from('a pair record, as bytes'),
  Empty: '',
  Long: 'x'.repeat(300),
  Unicode: 'iPhone de Zoë ☃ 𝄞',
  Small: 200,
  Medium: 70_000,
  Large: 2 ** 40,
  Negative: -5,
  Real: 1.25,
  Yes: true,
  No: false,
  When: new Date('2026-11-27T12:00:00.000Z'),
  List: [1, 'two', [3, { four: 4 }], []],
  Many: Array.from({ length: 40 }, (_, i) => `item ${i}`),
};

describe('decodePlist', () => {
  it('reads binary plists as the plist package reads them', () => {
    const bytes = Buffer.from(buildBinary(ordinary));
    expect(decodePlist(bytes)).toEqual(parseBinary(bytes));
    expect(decodePlist(bytes).PairRecordData).toBeInstanceOf(Uint8Array);
    expect(decodePlist(bytes).When).toEqual(ordinary.When);
  });

  it('reads XML plists as the plist package reads them', () => {
    const text = build(ordinary);
    expect(decodePlist(Buffer.from(text))).toEqual(parse(text));
  });

  it('counts every expansion of a shared reference: 172 bytes that name 2^30 objects are refused at once', () => {
    const bomb = sharedReferencePlist(30);
    expect(bomb.length).toBeLessThan(200);
    const started = performance.now();
    expect(() => decodePlist(bomb)).toThrow(PlistLimitError);
    // Milliseconds alone; the bound leaves room for a loaded machine's pauses (a full run on two cores took 101 ms),
    // and is still far under the seconds that expanding the 2^30 objects would take.
    expect(performance.now() - started).toBeLessThan(1000);
    // The same shape within the limits decodes in full.
    expect(JSON.stringify(decodePlist(sharedReferencePlist(3)))).toBe(JSON.stringify({ Bomb: [[[true, true], [true, true]], [[true, true], [true, true]]] }));
  });

  it('refuses what is too deep, too long or has too many objects, in both forms', () => {
    const deep = (levels: number) => {
      let value: PlistValue = 1;
      for (let i = 0; i < levels; i++) value = [value];
      return { deep: value };
    };
    expect(() => decodePlist(Buffer.from(buildBinary(deep(31))))).not.toThrow();
    expect(() => decodePlist(Buffer.from(buildBinary(deep(32))))).toThrow(/maxDepth/);
    expect(() => decodePlist(Buffer.from(build(deep(31))))).not.toThrow();
    expect(() => decodePlist(Buffer.from(build(deep(32))))).toThrow(/maxDepth/);
    const wide = { list: Array.from({ length: 200 }, (_, i) => i) };
    const limits = { maxBytes: 1024 * 1024, maxDepth: 32, maxObjects: 150 };
    expect(() => decodePlist(Buffer.from(buildBinary(wide)), limits)).toThrow(/maxObjects/);
    expect(() => decodePlist(Buffer.from(build(wide)), limits)).toThrow(/maxObjects/);
    expect(() => decodePlist(Buffer.from(build({ big: 'x'.repeat(2 * 1024 * 1024) })))).toThrow(/maxBytes/);
  });

  it('refuses a binary plist that points outside itself or at itself, and what is neither binary nor XML', () => {
    const bytes = Buffer.from(buildBinary({ a: [1, 2, 3] }));
    const offsets = Buffer.from(bytes);
    offsets.writeUInt32BE(bytes.length, bytes.length - 4);
    expect(() => decodePlist(offsets)).toThrow(/malformed/);
    const truncated = Buffer.concat([bytes.subarray(0, 12), bytes.subarray(bytes.length - 32)]);
    expect(() => decodePlist(truncated)).toThrow();
    // An array whose one element is itself: the depth limit ends it, not the stack.
    const cycle = Buffer.from(sharedReferencePlist(1));
    cycle[8 + 3 + 5 + 1] = 2;
    cycle[8 + 3 + 5 + 2] = 2;
    expect(() => decodePlist(cycle)).toThrow(/maxDepth/);
    expect(() => decodePlist(Buffer.from('bplist01'))).toThrow();
    expect(() => decodePlist(Buffer.from('{ MessageType = Listen; }'))).toThrow();
    expect(() => decodePlist(Buffer.from('<?xml version="1.0"?><!DOCTYPE plist [<!ENTITY a "aaaa">]><plist><dict><key>a</key><string>&a;</string></dict></plist>'))).toThrow(/entities/);
  });
});
