import { randomBytes } from 'node:crypto';
import { crc32, deflateRawSync, inflateRawSync } from 'node:zlib';

/**
 * Just enough of the APK format for `pm install`: an APK is a zip whose AndroidManifest.xml is Android's binary
 * XML (ResXMLTree chunks: a string pool, a resource-id map, then namespace and element events). The writer
 * exists so tests and demo mode can make small real APKs without the SDK's aapt.
 */

// ---------------------------------------------------------------------------------------------------------
// Zip

const EOCD_SIG = 0x06054b50;
const CENTRAL_SIG = 0x02014b50;
const LOCAL_SIG = 0x04034b50;

export class ApkError extends Error {}

/** The first entry named `name` (or matching it, for a predicate), inflated. */
export function readZipEntry(zip: Buffer, name: string | ((entryName: string) => boolean)): Buffer | undefined {
  let eocd = -1;
  for (let i = zip.length - 22; i >= Math.max(0, zip.length - 22 - 0xffff); i--) {
    if (zip.readUInt32LE(i) === EOCD_SIG) {
      eocd = i;
      break;
    }
  }
  if (eocd < 0) throw new ApkError('not a zip file');
  const count = zip.readUInt16LE(eocd + 10);
  let p = zip.readUInt32LE(eocd + 16);
  for (let n = 0; n < count; n++) {
    if (p + 46 > zip.length || zip.readUInt32LE(p) !== CENTRAL_SIG) throw new ApkError('corrupt central directory');
    const method = zip.readUInt16LE(p + 10);
    const compressedSize = zip.readUInt32LE(p + 20);
    const nameLength = zip.readUInt16LE(p + 28);
    const extraLength = zip.readUInt16LE(p + 30);
    const commentLength = zip.readUInt16LE(p + 32);
    const localOffset = zip.readUInt32LE(p + 42);
    const entryName = zip.subarray(p + 46, p + 46 + nameLength).toString('utf8');
    if (typeof name === 'string' ? entryName === name : name(entryName)) {
      if (zip.readUInt32LE(localOffset) !== LOCAL_SIG) throw new ApkError('corrupt local header');
      const start = localOffset + 30 + zip.readUInt16LE(localOffset + 26) + zip.readUInt16LE(localOffset + 28);
      const raw = zip.subarray(start, start + compressedSize);
      if (method === 0) return raw;
      if (method === 8) return inflateRawSync(raw);
      throw new ApkError(`unsupported compression method ${method}`);
    }
    p += 46 + nameLength + extraLength + commentLength;
  }
  return undefined;
}

export function writeZip(entries: Array<{ name: string; data: Buffer; store?: boolean }>): Buffer {
  const locals: Buffer[] = [];
  const centrals: Buffer[] = [];
  let offset = 0;
  // 1980-01-01 00:00, the zip epoch, keeps builds reproducible.
  const dosTime = 0;
  const dosDate = (0 << 9) | (1 << 5) | 1;
  for (const entry of entries) {
    const name = Buffer.from(entry.name, 'utf8');
    const method = entry.store ? 0 : 8;
    const body = method === 8 ? deflateRawSync(entry.data) : entry.data;
    const crc = crc32(entry.data);
    const local = Buffer.alloc(30);
    local.writeUInt32LE(LOCAL_SIG, 0);
    local.writeUInt16LE(20, 4);
    local.writeUInt16LE(method, 8);
    local.writeUInt16LE(dosTime, 10);
    local.writeUInt16LE(dosDate, 12);
    local.writeUInt32LE(crc, 14);
    local.writeUInt32LE(body.length, 18);
    local.writeUInt32LE(entry.data.length, 22);
    local.writeUInt16LE(name.length, 26);
    locals.push(local, name, body);
    const central = Buffer.alloc(46);
    central.writeUInt32LE(CENTRAL_SIG, 0);
    central.writeUInt16LE(20, 4);
    central.writeUInt16LE(20, 6);
    central.writeUInt16LE(method, 10);
    central.writeUInt16LE(dosTime, 12);
    central.writeUInt16LE(dosDate, 14);
    central.writeUInt32LE(crc, 16);
    central.writeUInt32LE(body.length, 20);
    central.writeUInt32LE(entry.data.length, 24);
    central.writeUInt16LE(name.length, 28);
    central.writeUInt32LE(offset, 42);
    centrals.push(central, name);
    offset += 30 + name.length + body.length;
  }
  const centralDir = Buffer.concat(centrals);
  const eocd = Buffer.alloc(22);
  eocd.writeUInt32LE(EOCD_SIG, 0);
  eocd.writeUInt16LE(entries.length, 8);
  eocd.writeUInt16LE(entries.length, 10);
  eocd.writeUInt32LE(centralDir.length, 12);
  eocd.writeUInt32LE(offset, 16);
  return Buffer.concat([...locals, centralDir, eocd]);
}

// ---------------------------------------------------------------------------------------------------------
// Binary XML

const RES_STRING_POOL_TYPE = 0x0001;
const RES_XML_TYPE = 0x0003;
const RES_XML_START_NAMESPACE_TYPE = 0x0100;
const RES_XML_END_NAMESPACE_TYPE = 0x0101;
const RES_XML_START_ELEMENT_TYPE = 0x0102;
const RES_XML_END_ELEMENT_TYPE = 0x0103;
const RES_XML_RESOURCE_MAP_TYPE = 0x0180;
const UTF8_FLAG = 0x100;
const NO_INDEX = 0xffffffff;

const TYPE_REFERENCE = 0x01;
const TYPE_STRING = 0x03;
const TYPE_INT_DEC = 0x10;
const TYPE_INT_HEX = 0x11;
const TYPE_INT_BOOLEAN = 0x12;

export const ANDROID_NS = 'http://schemas.android.com/apk/res/android';

/** Resource ids of the framework attributes a manifest uses (android.R.attr). */
const ANDROID_ATTR_IDS: Record<string, number> = {
  label: 0x01010001,
  icon: 0x01010002,
  name: 0x01010003,
  exported: 0x01010010,
  minSdkVersion: 0x0101020c,
  versionCode: 0x0101021b,
  versionName: 0x0101021c,
  targetSdkVersion: 0x01010270,
  targetPackage: 0x01010021,
};
const ANDROID_ATTR_NAMES = new Map(Object.entries(ANDROID_ATTR_IDS).map(([k, v]) => [v, k]));

export type XmlValue = string | number | boolean | { ref: number };

export interface XmlElement {
  name: string;
  /** Keyed by local name; framework attributes are recognised by resource id even when names are stripped. */
  attrs: Map<string, XmlValue>;
  children: XmlElement[];
}

function readStringPool(buf: Buffer, start: number): string[] {
  const headerSize = buf.readUInt16LE(start + 2);
  const count = buf.readUInt32LE(start + 8);
  const flags = buf.readUInt32LE(start + 16);
  const stringsStart = start + buf.readUInt32LE(start + 20);
  const utf8 = (flags & UTF8_FLAG) !== 0;
  const strings: string[] = [];
  for (let i = 0; i < count; i++) {
    let p = stringsStart + buf.readUInt32LE(start + headerSize + i * 4);
    if (utf8) {
      // utf-16 length then utf-8 length, each one or two bytes
      p += buf[p]! & 0x80 ? 2 : 1;
      let len = buf[p]!;
      if (len & 0x80) {
        len = ((len & 0x7f) << 8) | buf[p + 1]!;
        p += 2;
      } else p += 1;
      strings.push(buf.subarray(p, p + len).toString('utf8'));
    } else {
      let len = buf.readUInt16LE(p);
      if (len & 0x8000) {
        len = ((len & 0x7fff) << 16) | buf.readUInt16LE(p + 2);
        p += 4;
      } else p += 2;
      strings.push(buf.subarray(p, p + len * 2).toString('utf16le'));
    }
  }
  return strings;
}

export function parseBinaryXml(buf: Buffer): XmlElement {
  if (buf.length < 8 || buf.readUInt16LE(0) !== RES_XML_TYPE) throw new ApkError('not binary XML');
  let strings: string[] = [];
  let resourceIds: number[] = [];
  const stack: XmlElement[] = [];
  let root: XmlElement | undefined;
  let p = buf.readUInt16LE(2);
  while (p + 8 <= buf.length) {
    const type = buf.readUInt16LE(p);
    const headerSize = buf.readUInt16LE(p + 2);
    const size = buf.readUInt32LE(p + 4);
    if (size < 8 || p + size > buf.length) throw new ApkError('corrupt chunk');
    switch (type) {
      case RES_STRING_POOL_TYPE:
        strings = readStringPool(buf, p);
        break;
      case RES_XML_RESOURCE_MAP_TYPE:
        resourceIds = [];
        for (let q = p + headerSize; q < p + size; q += 4) resourceIds.push(buf.readUInt32LE(q));
        break;
      case RES_XML_START_ELEMENT_TYPE: {
        const body = p + headerSize;
        const name = strings[buf.readUInt32LE(body + 4)] ?? '';
        const attrStart = buf.readUInt16LE(body + 8);
        const attrSize = buf.readUInt16LE(body + 10);
        const attrCount = buf.readUInt16LE(body + 12);
        const el: XmlElement = { name, attrs: new Map(), children: [] };
        for (let i = 0; i < attrCount; i++) {
          const a = body + attrStart + i * attrSize;
          const nameIndex = buf.readUInt32LE(a + 4);
          const attrName = ANDROID_ATTR_NAMES.get(resourceIds[nameIndex] ?? 0) ?? strings[nameIndex] ?? '';
          const raw = buf.readUInt32LE(a + 8);
          const dataType = buf[a + 15]!;
          const data = buf.readUInt32LE(a + 16);
          let value: XmlValue;
          if (raw !== NO_INDEX) value = strings[raw] ?? '';
          else if (dataType === TYPE_STRING) value = strings[data] ?? '';
          else if (dataType === TYPE_INT_BOOLEAN) value = data !== 0;
          else if (dataType === TYPE_INT_DEC || dataType === TYPE_INT_HEX) value = data | 0;
          else if (dataType === TYPE_REFERENCE) value = { ref: data };
          else value = data;
          el.attrs.set(attrName, value);
        }
        if (stack.length > 0) stack[stack.length - 1]!.children.push(el);
        else root ??= el;
        stack.push(el);
        break;
      }
      case RES_XML_END_ELEMENT_TYPE:
        stack.pop();
        break;
      default:
        break;
    }
    p += size;
  }
  if (!root) throw new ApkError('empty binary XML');
  return root;
}

export interface XmlSpec {
  name: string;
  /** Names prefixed with `android:` go into the framework namespace with their resource id. */
  attrs?: Record<string, string | number | boolean>;
  children?: XmlSpec[];
}

function chunk(type: number, headerSize: number, header: Buffer, body: Buffer): Buffer {
  const head = Buffer.alloc(8);
  head.writeUInt16LE(type, 0);
  head.writeUInt16LE(headerSize, 2);
  head.writeUInt32LE(8 + header.length + body.length, 4);
  return Buffer.concat([head, header, body]);
}

function u32s(...values: number[]): Buffer {
  const b = Buffer.alloc(values.length * 4);
  values.forEach((v, i) => b.writeUInt32LE(v >>> 0, i * 4));
  return b;
}

/** Compiles an element tree the way aapt lays it out (UTF-16 pool, framework attribute names first). */
export function writeBinaryXml(root: XmlSpec): Buffer {
  const androidNames: string[] = [];
  const others: string[] = [];
  const note = (s: string, android = false) => {
    const list = android ? androidNames : others;
    if (!list.includes(s)) list.push(s);
  };
  const visit = (el: XmlSpec) => {
    note(el.name);
    for (const [key, value] of Object.entries(el.attrs ?? {})) {
      if (key.startsWith('android:')) note(key.slice(8), true);
      else note(key);
      if (typeof value === 'string') note(value);
    }
    el.children?.forEach(visit);
  };
  note('android');
  note(ANDROID_NS);
  visit(root);
  for (const n of androidNames) {
    if (ANDROID_ATTR_IDS[n] === undefined) throw new Error(`no resource id known for android:${n}`);
  }
  const strings = [...androidNames, ...others.filter((s) => !androidNames.includes(s))];
  const index = (s: string) => strings.indexOf(s);

  const encoded = strings.map((s) => {
    const chars = Buffer.from(s, 'utf16le');
    const out = Buffer.alloc(2 + chars.length + 2);
    out.writeUInt16LE(s.length, 0);
    chars.copy(out, 2);
    return out;
  });
  const offsets: number[] = [];
  let at = 0;
  for (const e of encoded) {
    offsets.push(at);
    at += e.length;
  }
  let data = Buffer.concat(encoded);
  if (data.length % 4) data = Buffer.concat([data, Buffer.alloc(4 - (data.length % 4))]);
  const poolHeader = u32s(strings.length, 0, 0, 28 + strings.length * 4, 0);
  const pool = chunk(RES_STRING_POOL_TYPE, 28, poolHeader, Buffer.concat([u32s(...offsets), data]));
  const resMap = chunk(RES_XML_RESOURCE_MAP_TYPE, 8, Buffer.alloc(0), u32s(...androidNames.map((n) => ANDROID_ATTR_IDS[n]!)));

  const nodeHeader = (line: number) => u32s(line, NO_INDEX);
  const events: Buffer[] = [chunk(RES_XML_START_NAMESPACE_TYPE, 16, nodeHeader(1), u32s(index('android'), index(ANDROID_NS)))];
  let line = 1;
  const emit = (el: XmlSpec) => {
    line++;
    const attrs = Object.entries(el.attrs ?? {}).map(([key, value]) => {
      const android = key.startsWith('android:');
      const name = android ? key.slice(8) : key;
      const a = Buffer.alloc(20);
      a.writeUInt32LE(android ? index(ANDROID_NS) : NO_INDEX, 0);
      a.writeUInt32LE(index(name), 4);
      a.writeUInt16LE(8, 12);
      if (typeof value === 'string') {
        a.writeUInt32LE(index(value), 8);
        a[15] = TYPE_STRING;
        a.writeUInt32LE(index(value), 16);
      } else {
        a.writeUInt32LE(NO_INDEX, 8);
        a[15] = typeof value === 'boolean' ? TYPE_INT_BOOLEAN : TYPE_INT_DEC;
        a.writeUInt32LE(typeof value === 'boolean' ? (value ? 0xffffffff : 0) : value, 16);
      }
      return { id: android ? ANDROID_ATTR_IDS[name]! : 0xffffffff, a };
    });
    // aapt sorts attributes by resource id; the platform's parser binary-searches them.
    attrs.sort((x, y) => x.id - y.id);
    const ext = Buffer.alloc(20);
    ext.writeUInt32LE(NO_INDEX, 0);
    ext.writeUInt32LE(index(el.name), 4);
    ext.writeUInt16LE(20, 8);
    ext.writeUInt16LE(20, 10);
    ext.writeUInt16LE(attrs.length, 12);
    events.push(chunk(RES_XML_START_ELEMENT_TYPE, 16, nodeHeader(line), Buffer.concat([ext, ...attrs.map((x) => x.a)])));
    el.children?.forEach(emit);
    events.push(chunk(RES_XML_END_ELEMENT_TYPE, 16, nodeHeader(line), u32s(NO_INDEX, index(el.name))));
  };
  emit(root);
  events.push(chunk(RES_XML_END_NAMESPACE_TYPE, 16, nodeHeader(line), u32s(index('android'), index(ANDROID_NS))));
  return chunk(RES_XML_TYPE, 8, Buffer.alloc(0), Buffer.concat([pool, resMap, ...events]));
}

// ---------------------------------------------------------------------------------------------------------
// Manifest

export interface ApkActivity {
  /** Fully qualified class name. */
  name: string;
  launcher: boolean;
}

export interface ApkInfo {
  packageName: string;
  versionCode: number;
  versionName: string;
  /** The application label when the manifest holds it as text; a resource reference leaves it undefined. */
  label?: string;
  activities: ApkActivity[];
  /** Fully qualified class names of the `<service>` elements. */
  services: string[];
  /** The services that are input methods (bound with BIND_INPUT_METHOD): what `ime list -a` offers. */
  inputMethods: string[];
  /** The `<instrumentation>` elements: the test runners `am instrument` can start in another package's process. */
  instrumentations: ApkInstrumentation[];
}

export interface ApkInstrumentation {
  /** Fully qualified runner class, e.g. androidx.test.runner.AndroidJUnitRunner. */
  name: string;
  /** The package whose process the runner is loaded into. */
  targetPackage: string;
}

function qualify(pkg: string, name: string): string {
  if (name.startsWith('.')) return pkg + name;
  return name.includes('.') ? name : `${pkg}.${name}`;
}

const RES_TABLE_TYPE = 0x0002;
const RES_TABLE_PACKAGE_TYPE = 0x0200;
const RES_TABLE_TYPE_TYPE = 0x0201;
const FLAG_COMPLEX = 0x0001;
const FLAG_SPARSE = 0x01;
const FLAG_OFFSET16 = 0x02;

/**
 * Looks a string resource up in resources.arsc, preferring the default configuration, because real manifests
 * point their label at `@string/...`.
 */
export function resolveStringResource(arsc: Buffer, id: number, depth = 0): string | undefined {
  if (depth > 4 || arsc.length < 12 || arsc.readUInt16LE(0) !== RES_TABLE_TYPE) return undefined;
  const packageId = id >>> 24;
  const typeId = (id >>> 16) & 0xff;
  const entryId = id & 0xffff;
  let globalStrings: string[] = [];
  let p = arsc.readUInt16LE(2);
  while (p + 8 <= arsc.length) {
    const type = arsc.readUInt16LE(p);
    const size = arsc.readUInt32LE(p + 4);
    if (size < 8) return undefined;
    if (type === RES_STRING_POOL_TYPE) globalStrings = readStringPool(arsc, p);
    if (type === RES_TABLE_PACKAGE_TYPE && arsc.readUInt32LE(p + 8) === packageId) {
      let fallback: string | undefined;
      let q = p + arsc.readUInt16LE(p + 2);
      while (q + 8 <= p + size) {
        const ctype = arsc.readUInt16LE(q);
        const csize = arsc.readUInt32LE(q + 4);
        if (csize < 8) break;
        if (ctype === RES_TABLE_TYPE_TYPE && arsc[q + 8] === typeId) {
          const headerSize = arsc.readUInt16LE(q + 2);
          const flags = arsc[q + 9]!;
          const entryCount = arsc.readUInt32LE(q + 12);
          const entriesStart = arsc.readUInt32LE(q + 16);
          const configSize = arsc.readUInt32LE(q + 20);
          const isDefault = arsc.subarray(q + 24, q + 20 + configSize).every((b) => b === 0);
          let offset: number | undefined;
          if (flags & FLAG_SPARSE) {
            for (let i = 0; i < entryCount; i++) {
              if (arsc.readUInt16LE(q + headerSize + i * 4) === entryId) offset = arsc.readUInt16LE(q + headerSize + i * 4 + 2) * 4;
            }
          } else if (entryId < entryCount) {
            if (flags & FLAG_OFFSET16) {
              const o = arsc.readUInt16LE(q + headerSize + entryId * 2);
              offset = o === 0xffff ? undefined : o * 4;
            } else {
              const o = arsc.readUInt32LE(q + headerSize + entryId * 4);
              offset = o === NO_INDEX ? undefined : o;
            }
          }
          if (offset !== undefined) {
            const e = q + entriesStart + offset;
            if ((arsc.readUInt16LE(e + 2) & FLAG_COMPLEX) === 0) {
              const v = e + arsc.readUInt16LE(e);
              const dataType = arsc[v + 3];
              const data = arsc.readUInt32LE(v + 4);
              const value =
                dataType === TYPE_STRING
                  ? globalStrings[data]
                  : dataType === TYPE_REFERENCE
                    ? resolveStringResource(arsc, data, depth + 1)
                    : undefined;
              if (isDefault && value !== undefined) return value;
              fallback ??= value;
            }
          }
        }
        q += csize;
      }
      return fallback;
    }
    p += size;
  }
  return undefined;
}

export function readApkInfo(apk: Buffer): ApkInfo {
  const manifestXml = readZipEntry(apk, 'AndroidManifest.xml');
  if (!manifestXml) throw new ApkError('no AndroidManifest.xml');
  const manifest = parseBinaryXml(manifestXml);
  const pkg = manifest.attrs.get('package');
  if (manifest.name !== 'manifest' || typeof pkg !== 'string' || !pkg) throw new ApkError('manifest has no package');
  const versionCode = manifest.attrs.get('versionCode');
  const versionName = manifest.attrs.get('versionName');
  const app = manifest.children.find((c) => c.name === 'application');
  const label = app?.attrs.get('label');
  const activities: ApkActivity[] = [];
  for (const el of app?.children ?? []) {
    if (el.name !== 'activity' && el.name !== 'activity-alias') continue;
    const name = el.attrs.get('name');
    if (typeof name !== 'string') continue;
    const launcher = el.children.some(
      (f) =>
        f.name === 'intent-filter' &&
        f.children.some((c) => c.name === 'action' && c.attrs.get('name') === 'android.intent.action.MAIN') &&
        f.children.some((c) => c.name === 'category' && c.attrs.get('name') === 'android.intent.category.LAUNCHER'),
    );
    activities.push({ name: qualify(pkg, name), launcher });
  }
  const services = (app?.children ?? []).flatMap((el) => {
    const name = el.name === 'service' ? el.attrs.get('name') : undefined;
    return typeof name === 'string' ? [qualify(pkg, name)] : [];
  });
  const inputMethods = (app?.children ?? []).flatMap((el) => {
    const name = el.name === 'service' && el.attrs.get('permission') === 'android.permission.BIND_INPUT_METHOD' ? el.attrs.get('name') : undefined;
    return typeof name === 'string' ? [qualify(pkg, name)] : [];
  });
  const instrumentations = manifest.children.flatMap((el) => {
    const name = el.name === 'instrumentation' ? el.attrs.get('name') : undefined;
    const target = el.attrs.get('targetPackage');
    return typeof name === 'string' && typeof target === 'string' ? [{ name: qualify(pkg, name), targetPackage: target }] : [];
  });
  return {
    packageName: pkg,
    versionCode: typeof versionCode === 'number' ? versionCode : 1,
    versionName: typeof versionName === 'string' ? versionName : String(versionCode ?? '1'),
    label: typeof label === 'string' ? label : typeof label === 'object' ? labelFromResources(apk, label.ref) : undefined,
    activities,
    services,
    inputMethods,
    instrumentations,
  };
}

function labelFromResources(apk: Buffer, id: number): string | undefined {
  try {
    const arsc = readZipEntry(apk, 'resources.arsc');
    return arsc ? resolveStringResource(arsc, id) : undefined;
  } catch {
    return undefined;
  }
}

export interface ApkSpec {
  packageName: string;
  label?: string;
  versionCode?: number;
  versionName?: string;
  /** Class names (`.Main` or fully qualified); the first one is the launcher activity. */
  activities?: string[];
  /** Bytes of incompressible assets (assets/payload.bin), for an APK of a real app's size. */
  payloadBytes?: number;
}

/** A minimal installable APK: a zip with a compiled manifest and an empty classes.dex. */
export function buildApk(spec: ApkSpec): Buffer {
  const activities = spec.activities ?? ['.MainActivity'];
  const manifest: XmlSpec = {
    name: 'manifest',
    attrs: {
      'android:versionCode': spec.versionCode ?? 1,
      'android:versionName': spec.versionName ?? '1.0',
      package: spec.packageName,
    },
    children: [
      { name: 'uses-sdk', attrs: { 'android:minSdkVersion': 21, 'android:targetSdkVersion': 33 } },
      {
        name: 'application',
        attrs: { 'android:label': spec.label ?? spec.packageName },
        children: activities.map((name, i) => ({
          name: 'activity',
          attrs: { 'android:name': name, 'android:exported': true },
          children:
            i === 0
              ? [
                  {
                    name: 'intent-filter',
                    children: [
                      { name: 'action', attrs: { 'android:name': 'android.intent.action.MAIN' } },
                      { name: 'category', attrs: { 'android:name': 'android.intent.category.LAUNCHER' } },
                    ],
                  },
                ]
              : [],
        })),
      },
    ],
  };
  // "dex\n035\0" with an otherwise empty header: enough for anything that sniffs the file type.
  const dex = Buffer.alloc(0x70);
  dex.write('dex\n035\0', 0, 'latin1');
  return writeZip([
    { name: 'AndroidManifest.xml', data: writeBinaryXml(manifest) },
    { name: 'classes.dex', data: dex },
    ...(spec.payloadBytes ? [{ name: 'assets/payload.bin', data: randomBytes(spec.payloadBytes) }] : []),
  ]);
}
