import { createHash } from 'node:crypto';
import { build, buildBinary, type PlistValue } from 'plist';
import { writeZip } from '../../src/sim/android/apk.js';

export { buildApk } from '../../src/sim/android/apk.js';

export const sha256 = (bytes: Buffer) => createHash('sha256').update(bytes).digest('hex');

export interface IpaSpec {
  bundleId: string;
  shortVersion?: string;
  build?: string;
  displayName?: string;
  /** CFBundleName, which names the app when there is no CFBundleDisplayName. */
  name?: string;
  /** A binary (bplist00) Info.plist, as Xcode ships it, rather than XML. */
  binary?: boolean;
  /** UIFileSharingEnabled: the app shares its Documents (house_arrest's VendDocuments, the Files app, Finder). */
  fileSharing?: boolean;
}

/** An .ipa as App Store Connect and Xcode export it: a zip with Payload/<name>.app/Info.plist and an executable. */
export function buildIpa(spec: IpaSpec): Buffer {
  const info: Record<string, PlistValue> = { CFBundleIdentifier: spec.bundleId, CFBundleExecutable: 'App', CFBundlePackageType: 'APPL' };
  if (spec.shortVersion) info.CFBundleShortVersionString = spec.shortVersion;
  if (spec.build) info.CFBundleVersion = spec.build;
  if (spec.displayName) info.CFBundleDisplayName = spec.displayName;
  if (spec.name) info.CFBundleName = spec.name;
  if (spec.fileSharing !== undefined) info.UIFileSharingEnabled = spec.fileSharing;
  const plist = spec.binary ? Buffer.from(buildBinary(info)) : Buffer.from(build(info));
  // Mach-O magic (64-bit, little-endian) at the start of an otherwise empty executable.
  const executable = Buffer.alloc(64);
  executable.writeUInt32LE(0xfeedfacf, 0);
  return writeZip([
    { name: 'Payload/App.app/Info.plist', data: plist },
    { name: 'Payload/App.app/App', data: executable },
  ]);
}
