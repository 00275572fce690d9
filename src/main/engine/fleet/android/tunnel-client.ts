import { PassThrough, type Duplex } from 'node:stream';
import * as adbkit from '@devicefarmer/adbkit';
import * as connectionModule from '@devicefarmer/adbkit/dist/src/adb/connection.js';
import type ConnectionType from '@devicefarmer/adbkit/dist/src/adb/connection.js';
import { Adb, NO_ADB, type Client } from './adb.js';

// adbkit's connection is not exported from its index; its promises are Bluebird's, whose extra methods (.return,
// .timeout) adbkit's own commands call on what connection() answers. Both are imported, not required: the engine's
// bundle then holds one adbkit, whose Bluebird is its own. A second copy, required from node_modules when the first
// provider was added, turned on cancellation in the Bluebird that the APK reader and appium-ios-device share, which
// Bluebird refuses once one of its promises has settled (a 500 in demo mode after an app upload).
// CommonJS seen from an ES module: Node and esbuild make module.exports the default export (the class is its
// `default`), vitest's interop the class itself; for adbkit's index, a bundler puts the names on the namespace.
const connectionExport = (connectionModule as unknown as { default: typeof ConnectionType | { default: typeof ConnectionType } }).default;
const Connection = 'default' in connectionExport ? connectionExport.default : connectionExport;
const Parser: typeof adbkit.Parser = adbkit.Parser ?? (adbkit as unknown as { default: { Parser: typeof adbkit.Parser } }).default.Parser;
type Connecting = ReturnType<ConnectionType['connect']>;
/**
 * adbkit's own Bluebird, whichever copy that is where this runs (bundled with it, or node_modules'): the class of a
 * promise its parser makes. Imported by name, a bundler that leaves adbkit outside would bring a copy of its own.
 */
const Bluebird = (new Parser(new PassThrough().end()).readAll() as unknown as { constructor: { resolve<T>(value: Promise<T>): { then(next: (value: T) => ConnectionType): Connecting } } }).constructor;

/** One adb-server connection over a stream someone else opened (an SSH channel to a provider's adb server). */
class StreamConnection extends Connection {
  constructor(private readonly open: () => Promise<Duplex>) {
    super({ port: 0, bin: NO_ADB });
  }

  // Replaces Net.connect: and with it adbkit's "connection refused, start a server and retry", which behind a
  // tunnel would start a hub-local server posing as the provider's.
  override connect(): Connecting {
    return Bluebird.resolve(this.open()).then((stream) => {
      this.socket = stream as unknown as ConnectionType['socket'];
      this.parser = new Parser(stream);
      stream.on('end', () => this.emit('end'));
      stream.on('drain', () => this.emit('drain'));
      stream.on('close', () => this.emit('close', false));
      // As adbkit does for its socket: an error nobody else listens to is re-emitted, not thrown.
      stream.on('error', (error: Error) => {
        if (stream.listenerCount('error') === 1) this.emit('error', error);
      });
      return this;
    });
  }

  override startServer(): never {
    throw new Error('Benchtop never starts an adb server for a provider.');
  }
}

/**
 * An adbkit client whose every adb-server connection is a stream from `open` (a new SSH channel each time) rather
 * than a TCP socket on this machine. Everything the fleet and the driver do through adbkit works on it unchanged.
 */
export function streamClient(open: () => Promise<Duplex>): Client {
  const client = Adb.createClient({ host: '127.0.0.1', port: 0, bin: NO_ADB });
  client.connection = () => {
    const connection = new StreamConnection(open);
    connection.on('error', (error: Error) => client.emit('error', error));
    return connection.connect();
  };
  return client;
}
