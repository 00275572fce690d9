import { randomUUID } from 'node:crypto';
import type { Socket } from 'node:net';
import { TLSSocket } from 'node:tls';
import type { Pairing } from '../../protocols/apple/pairing.js';
import { PlistChannel, type PlistDict } from '../../protocols/apple/plist-wire.js';

export const LOCKDOWN_PORT = 62078;

/** What lockdownd needs of its phone. */
export interface LockdownHost {
  /** The pairing the phone trusts, or undefined while it has trusted no computer. */
  pairing(): Pairing | undefined;
  /** Values by domain ('' is the default domain). */
  values(domain: string): Record<string, unknown> | undefined;
  /**
   * Starts a service and returns the port it listens on and whether the host must speak TLS to it (the secure
   * developer services), or undefined for a service the phone does not offer (now).
   */
  startService(name: string): { port: number; ssl: boolean } | undefined;
}

/** Keys a phone answers before any session, so that a host can tell what it is talking to before pairing. */
const PUBLIC_KEYS = new Set([
  'BuildVersion', 'DeviceClass', 'DeviceName', 'HardwareModel', 'ProductName', 'ProductType', 'ProductVersion',
  'UniqueDeviceID', 'SerialNumber', 'DevicePublicKey', 'WiFiAddress', 'CPUArchitecture', 'TimeZone', 'TimeIntervalSince1970', 'TimeZoneOffsetFromUTC',
]);

/**
 * lockdownd on port 62078: length-prefixed plists. QueryType and a few public values need nothing; StartSession with
 * the paired host's HostID switches the connection to TLS (the phone's certificate from the pair record), and inside a
 * session every value and StartService are available.
 */
export function serveLockdown(socket: Socket, host: LockdownHost): void {
  let session: string | undefined;
  let stream: Socket | TLSSocket = socket;
  socket.on('error', () => undefined);
  const channel = new PlistChannel(socket, (request) => {
    const name = String(request.Request ?? '');
    const reply = (body: PlistDict) => channel.send({ Request: name, ...body });
    const fail = (error: string) => channel.send({ Request: name, Error: error });
    switch (name) {
      case 'QueryType':
        return reply({ Type: 'com.apple.mobile.lockdown' });
      case 'GetValue': {
        const domain = typeof request.Domain === 'string' ? request.Domain : '';
        const values = host.values(domain);
        if (!values) return fail('MissingValue');
        const key = typeof request.Key === 'string' ? request.Key : undefined;
        if (!session) {
          if (domain || (key !== undefined && !PUBLIC_KEYS.has(key))) return fail('InvalidSession');
          // All values, asked for outside a session, are the public ones (what `ideviceinfo -s` and
          // appium-ios-device's getDeviceInfo read).
          if (key === undefined) return reply({ Domain: request.Domain, Value: Object.fromEntries(Object.entries(values).filter(([name]) => PUBLIC_KEYS.has(name))) });
        }
        if (key === undefined) return reply({ Domain: request.Domain, Value: values });
        if (!(key in values)) return fail('MissingValue');
        return reply({ Domain: request.Domain, Key: key, Value: values[key] });
      }
      case 'SetValue':
        return session ? reply({}) : fail('InvalidSession');
      case 'ValidatePair':
      case 'Pair': {
        const pairing = host.pairing();
        // An untrusted phone shows the "Trust This Computer?" alert and answers so until someone taps Trust.
        return pairing ? reply({}) : fail('PairingDialogResponsePending');
      }
      case 'StartSession': {
        const pairing = host.pairing();
        if (!pairing || request.HostID !== pairing.hostId) return fail('InvalidHostID');
        session = randomUUID().toUpperCase();
        reply({ SessionID: session, EnableSessionSSL: true });
        channel.detach();
        const tls = new TLSSocket(socket, {
          isServer: true,
          key: pairing.devicePrivateKey,
          cert: pairing.deviceCertificate,
          // The host presents its certificate (libimobiledevice: the root's, appium-ios-device: the host's), both from
          // the pair record; the pairing check is the HostID above, as on the phone.
          requestCert: true,
          rejectUnauthorized: false,
        });
        tls.on('error', () => socket.destroy());
        // The host ends TLS after StopSession and goes on in plain text; the phone hangs up here instead.
        tls.on('end', () => tls.end());
        stream = tls;
        channel.rebind(tls);
        return;
      }
      case 'StopSession':
        if (!session) return fail('NoRunningSession');
        session = undefined;
        return reply({});
      case 'StartService': {
        if (!session) return fail('InvalidService');
        const started = host.startService(String(request.Service ?? ''));
        if (started === undefined) return fail('InvalidService');
        return reply({ Service: request.Service, Port: started.port, ...(started.ssl ? { EnableServiceSSL: true } : {}) });
      }
      case 'Goodbye':
        reply({ Result: 'Success' });
        stream.end();
        return;
      default:
        return fail('UnknownRequest');
    }
  });
}
