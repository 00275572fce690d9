// @devicefarmer/adbkit-apkreader ships no types; this is the part of its API Benchtop uses.
declare module '@devicefarmer/adbkit-apkreader' {
  interface Manifest {
    package?: unknown;
    versionCode?: unknown;
    versionName?: unknown;
    usesSdk?: { minSdkVersion?: unknown };
    application?: { label?: unknown };
  }
  interface ApkReader {
    readManifest(): PromiseLike<Manifest>;
  }
  const ApkReader: { open(apk: string | Buffer): PromiseLike<ApkReader> };
  export default ApkReader;
}
