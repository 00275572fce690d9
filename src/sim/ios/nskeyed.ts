import { buildBinary, parseBinary } from 'plist';

/**
 * NSKeyedArchiver, the phone's side: the object graph Foundation writes into a binary plist ($archiver, $top,
 * $objects, objects pointing at each other by UID, classes named in $classes/$classname). DTX carries selectors,
 * arguments and return values this way, and an .xctestconfiguration file is one. Written from the format, as a peer
 * to appium-ios-device's archiver, not with it.
 */

export class NSUUID {
  constructor(readonly value: string) {}
}

export class NSURL {
  constructor(
    readonly base: string | null,
    readonly relative: string,
  ) {}
}

/** What an Objective-C method answers when it fails: a domain, a code and a human description. */
export class NSError {
  constructor(
    readonly domain: string,
    readonly code: number,
    readonly description: string,
  ) {}
}

/** An archived object of a class this archiver has no JavaScript shape for: its class name and its decoded keys. */
export interface ArchivedObject {
  $class: string;
  [key: string]: unknown;
}

type Uid = { UID: number };
const isUid = (v: unknown): v is Uid => !!v && typeof v === 'object' && Object.keys(v).length === 1 && typeof (v as Uid).UID === 'number';

const ARCHIVE_VERSION = 100000;

export function archive(value: unknown): Buffer {
  const objects: unknown[] = ['$null'];
  const classes = new Map<string, Uid>();
  const classUid = (name: string, ...supers: string[]): Uid => {
    let uid = classes.get(name);
    if (!uid) {
      uid = { UID: objects.length };
      objects.push({ $classes: [name, ...supers, 'NSObject'], $classname: name });
      classes.set(name, uid);
    }
    return uid;
  };
  const encode = (v: unknown): Uid => {
    if (v === null || v === undefined) return { UID: 0 };
    const uid = { UID: objects.length };
    if (typeof v === 'string' || typeof v === 'number' || typeof v === 'boolean' || Buffer.isBuffer(v)) {
      objects.push(v);
      return uid;
    }
    // The slot is taken before the children are, so that the object's UID is the one its parent points at.
    objects.push(null);
    let record: Record<string, unknown>;
    if (Array.isArray(v)) {
      record = { 'NS.objects': v.map(encode), $class: classUid('NSArray') };
    } else if (v instanceof NSUUID) {
      record = { 'NS.uuidbytes': Buffer.from(v.value.replace(/-/g, ''), 'hex'), $class: classUid('NSUUID') };
    } else if (v instanceof NSURL) {
      record = { 'NS.base': encode(v.base), 'NS.relative': encode(v.relative), $class: classUid('NSURL') };
    } else if (v instanceof NSError) {
      record = {
        NSCode: v.code,
        NSDomain: encode(v.domain),
        NSUserInfo: encode({ NSLocalizedDescription: v.description }),
        $class: classUid('NSError'),
      };
    } else if (typeof v === 'object') {
      const entries = Object.entries(v as Record<string, unknown>).filter(([, x]) => x !== undefined);
      const keys = entries.map(([k]) => encode(k));
      record = { 'NS.keys': keys, 'NS.objects': entries.map(([, x]) => encode(x)), $class: classUid('NSDictionary') };
    } else {
      throw new Error(`NSKeyedArchiver cannot archive a ${typeof v}`);
    }
    objects[uid.UID] = record;
    return uid;
  };
  const root = encode(value);
  return Buffer.from(buildBinary({ $version: ARCHIVE_VERSION, $archiver: 'NSKeyedArchiver', $top: { root }, $objects: objects } as never));
}

/** Decodes an archive into plain values: dictionaries to objects, arrays and sets to arrays, NSUUID to its string. */
export function unarchive(bytes: Buffer): unknown {
  const plist = parseBinary(new Uint8Array(bytes)) as Record<string, unknown>;
  if (plist.$archiver !== 'NSKeyedArchiver' || Number(plist.$version) !== ARCHIVE_VERSION) throw new Error('Not an NSKeyedArchiver archive.');
  const objects = plist.$objects as unknown[];
  const top = plist.$top as { root?: unknown };
  if (!Array.isArray(objects) || !isUid(top?.root)) throw new Error('The archive has no root object.');
  const decoding = new Set<number>();
  const decode = (ref: unknown): unknown => {
    if (!isUid(ref)) return typeof ref === 'bigint' ? Number(ref) : ref;
    if (ref.UID === 0) return null;
    if (decoding.has(ref.UID)) throw new Error(`The archive has a cycle through object ${ref.UID}.`);
    const raw = objects[ref.UID];
    if (!raw || typeof raw !== 'object' || Buffer.isBuffer(raw) || raw instanceof Uint8Array || !('$class' in raw)) {
      return raw instanceof Uint8Array ? Buffer.from(raw) : typeof raw === 'bigint' ? Number(raw) : raw;
    }
    decoding.add(ref.UID);
    try {
      const record = raw as Record<string, unknown>;
      const meta = objects[(record.$class as Uid).UID] as { $classname: string };
      const field = (key: string) => decode(record[key]);
      switch (meta.$classname) {
        case 'NSDictionary':
        case 'NSMutableDictionary': {
          const keys = (record['NS.keys'] as unknown[]).map(decode);
          const values = (record['NS.objects'] as unknown[]).map(decode);
          return Object.fromEntries(keys.map((k, i) => [String(k), values[i]]));
        }
        case 'NSArray':
        case 'NSMutableArray':
        case 'NSSet':
        case 'NSMutableSet':
          return (record['NS.objects'] as unknown[]).map(decode);
        case 'NSUUID': {
          const hex = Buffer.from(record['NS.uuidbytes'] as Uint8Array).toString('hex').toUpperCase();
          return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
        }
        case 'NSURL':
          return new NSURL(field('NS.base') as string | null, String(field('NS.relative')));
        case 'NSMutableString':
          return field('NS.string');
        case 'NSMutableData':
          return field('NS.data');
        case 'NSNull':
          return null;
        case 'NSError': {
          const info = field('NSUserInfo') as Record<string, unknown> | null;
          return new NSError(String(field('NSDomain')), Number(field('NSCode')), String(info?.NSLocalizedDescription ?? ''));
        }
        default: {
          const out: ArchivedObject = { $class: meta.$classname };
          for (const key of Object.keys(record)) if (key !== '$class') out[key] = field(key);
          return out;
        }
      }
    } finally {
      decoding.delete(ref.UID);
    }
  };
  return decode(top.root);
}
