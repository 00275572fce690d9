import { describe, expect, it } from 'vitest';
import { DTX_MAX_MESSAGE, DTX_TYPE, DtxReader, encodeDtx } from './dtx.js';

describe('DtxReader, bounded against its peer', () => {
  const call = encodeDtx({ identifier: 7, channel: 1, expectsReply: true, type: DTX_TYPE.CALL, aux: [{ u32: 5 }, { object: 'an argument' }], payload: '_IDE_doSomething:' });

  it('reassembles a message that arrives a byte at a time, and two in one chunk', () => {
    const reader = new DtxReader();
    const got = [...call].flatMap((byte) => reader.push(Buffer.from([byte])));
    expect(got).toHaveLength(1);
    expect(got[0]).toMatchObject({ identifier: 7, channel: 1, expectsReply: true, payload: '_IDE_doSomething:', aux: [5, 'an argument'] });
    expect(new DtxReader().push(Buffer.concat([call, call]))).toHaveLength(2);
  });

  it('refuses a header declaring more than DTX_MAX_MESSAGE before any of it arrives', () => {
    const huge = Buffer.from(call.subarray(0, 32));
    huge.writeUInt32LE(0xffffffff, 12);
    expect(() => new DtxReader().push(huge)).toThrow(`A DTX message of 4294967295 bytes is over ${DTX_MAX_MESSAGE}.`);
  });

  it('refuses a 17th fragmented message opened at once', () => {
    const reader = new DtxReader();
    const first = (identifier: number) => {
      const header = Buffer.from(call.subarray(0, 32));
      header.writeUInt16LE(0, 8);
      header.writeUInt16LE(3, 10);
      header.writeUInt32LE(identifier, 16);
      return header;
    };
    for (let i = 0; i < 16; i++) reader.push(first(i));
    expect(() => reader.push(first(16))).toThrow(/More than 16 fragmented/);
  });
});
