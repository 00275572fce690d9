import * as adbkit from '@devicefarmer/adbkit';
import type { Duplex } from 'node:stream';

// adbkit is CommonJS whose named exports Node cannot see from an ES module: under Node they sit on the default
// export, under a bundler on the namespace itself.
export const Adb: typeof adbkit.Adb = adbkit.Adb ?? (adbkit as unknown as { default: { Adb: typeof adbkit.Adb } }).default.Adb;
/** A connection to one adb server. */
export type Client = ReturnType<typeof Adb.createClient>;

/** Where adbkit would look for the adb CLI: nowhere, so that nothing it does can start a server on this machine. */
export const NO_ADB = '/nonexistent/benchtop-never-runs-adb';

export const readAll = (stream: Duplex): Promise<Buffer> => Adb.util.readAll(stream) as unknown as Promise<Buffer>;
