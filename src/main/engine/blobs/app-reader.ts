import type { Entry, ZipFile } from 'yauzl';

/** What an app binary says about itself. */
export interface AppInfo {
  platform: 'android' | 'ios';
  bundleId: string;
  /** The label or display name; null when the app names none. */
  name: string | null;
  /** versionName, or CFBundleShortVersionString. */
  version: string | null;
  /** versionCode, or CFBundleVersion. */
  build: string | null;
  metadata: Record<string, string | number | null>;
}

/** The file is not an app Benchtop can read; the message is the file's failureReason. */
export class NotAnApp extends Error {}

/** An Info.plist is a few KiB; anything this large is not one, and is not read into memory. */
const MAX_PLIST_BYTES = 4 * 1024 * 1024;
const INFO_PLIST = /^Payload\/[^/]+\.app\/Info\.plist$/;

// The readers load on the first upload: a lab that never stores an app never pays their start-up cost.
async function openZip(path: string): Promise<ZipFile> {
  const { default: yauzl } = await import('yauzl');
  return new Promise<ZipFile>((resolve, reject) =>
    yauzl.open(path, { lazyEntries: true, autoClose: false }, (error, zip) => (error ? reject(error) : resolve(zip))),
  );
}

/** The entries' names, and the Info.plist entry when there is one; the central directory is all that is read. */
async function survey(zip: ZipFile): Promise<{ manifest: boolean; infoPlist?: Entry }> {
  return new Promise((resolve, reject) => {
    let manifest = false;
    let infoPlist: Entry | undefined;
    zip.on('entry', (entry: Entry) => {
      if (entry.fileName === 'AndroidManifest.xml') manifest = true;
      else if (!infoPlist && INFO_PLIST.test(entry.fileName)) infoPlist = entry;
      zip.readEntry();
    });
    zip.on('end', () => resolve({ manifest, infoPlist }));
    zip.on('error', reject);
    zip.readEntry();
  });
}

async function readEntry(zip: ZipFile, entry: Entry): Promise<Buffer> {
  if (entry.uncompressedSize > MAX_PLIST_BYTES) throw new NotAnApp(`${entry.fileName} is larger than ${MAX_PLIST_BYTES} bytes.`);
  const chunks: Buffer[] = [];
  for await (const chunk of await zip.openReadStreamPromise(entry)) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

const text = (value: unknown): string | null => (typeof value === 'string' && value.trim() !== '' ? value : null);
const integer = (value: unknown): number | null => (typeof value === 'number' && Number.isInteger(value) ? value : null);

async function readApk(path: string): Promise<AppInfo> {
  let manifest;
  try {
    await import('../fleet/android/adbkit-first.js');
    const { default: ApkReader } = await import('@devicefarmer/adbkit-apkreader');
    manifest = await (await ApkReader.open(path)).readManifest();
  } catch (error) {
    throw new NotAnApp(`The APK's AndroidManifest.xml cannot be read: ${(error as Error).message}`);
  }
  const pkg = text(manifest.package);
  if (!pkg) throw new NotAnApp('The APK\'s manifest names no package.');
  // A label that points at a resource comes back as "resourceId:0x..."; it names nothing a person would read.
  const label = text(manifest.application?.label);
  const versionCode = integer(manifest.versionCode);
  const versionName = text(manifest.versionName);
  return {
    platform: 'android',
    bundleId: pkg,
    name: label?.startsWith('resourceId:') ? null : label,
    version: versionName,
    build: versionCode === null ? null : String(versionCode),
    metadata: {
      package: pkg,
      versionName,
      versionCode,
      label: label?.startsWith('resourceId:') ? null : label,
      minSdk: integer(manifest.usesSdk?.minSdkVersion),
    },
  };
}

async function parsePlist(bytes: Buffer): Promise<Record<string, unknown>> {
  const [{ default: bplist }, { parse: parseXmlPlist }] = await Promise.all([import('bplist-parser'), import('plist')]);
  try {
    const value = bytes.subarray(0, 8).toString('latin1') === 'bplist00' ? bplist.parseBuffer(bytes)[0] : parseXmlPlist(bytes.toString('utf8'));
    if (value && typeof value === 'object' && !Array.isArray(value)) return value as Record<string, unknown>;
  } catch (error) {
    throw new NotAnApp(`The IPA's Info.plist cannot be read: ${(error as Error).message}`);
  }
  throw new NotAnApp('The IPA\'s Info.plist is not a dictionary.');
}

function readIpa(info: Record<string, unknown>): AppInfo {
  const bundleId = text(info.CFBundleIdentifier);
  if (!bundleId) throw new NotAnApp('The IPA\'s Info.plist has no CFBundleIdentifier.');
  const shortVersion = text(info.CFBundleShortVersionString);
  const bundleVersion = text(info.CFBundleVersion);
  const displayName = text(info.CFBundleDisplayName) ?? text(info.CFBundleName);
  return {
    platform: 'ios',
    bundleId,
    name: displayName,
    version: shortVersion,
    build: bundleVersion,
    metadata: { bundleIdentifier: bundleId, shortVersion, bundleVersion, displayName },
  };
}

/**
 * Reads an .apk (a zip with AndroidManifest.xml) or an .ipa (a zip with Payload/<name>.app/Info.plist) from disk.
 * The content decides, not the file name. Rejects with NotAnApp for anything else.
 */
export async function readAppInfo(path: string): Promise<AppInfo> {
  let zip: ZipFile;
  try {
    zip = await openZip(path);
  } catch (error) {
    throw new NotAnApp(`Not an app: the file is not a zip archive (.apk or .ipa): ${(error as Error).message}`);
  }
  try {
    let found;
    try {
      found = await survey(zip);
    } catch (error) {
      throw new NotAnApp(`Not an app: the zip archive is damaged: ${(error as Error).message}`);
    }
    if (found.manifest) return await readApk(path);
    if (found.infoPlist) return readIpa(await parsePlist(await readEntry(zip, found.infoPlist)));
    throw new NotAnApp('Not an app: the archive has neither AndroidManifest.xml (an APK) nor Payload/*.app/Info.plist (an IPA).');
  } finally {
    zip.close();
  }
}
