import { randomUUID } from 'node:crypto';
import { generate } from 'selfsigned';
import { encodePlist } from './plist-wire.js';

/** The certificates of one host–phone pairing: what a tap on "Trust This Computer" creates on both sides. */
export interface Pairing {
  hostId: string;
  systemBuid: string;
  rootCertificate: string;
  rootPrivateKey: string;
  hostCertificate: string;
  hostPrivateKey: string;
  deviceCertificate: string;
  devicePrivateKey: string;
  wifiMacAddress: string;
}

const TEN_YEARS_MS = 10 * 365 * 86_400_000;

/**
 * A root CA of the host signs both the host's certificate (the TLS client side of a lockdown session) and the
 * phone's (the server side), as libimobiledevice's pairing does. RSA 2048, as real pair records carry.
 */
export async function createPairing(systemBuid: string): Promise<Pairing> {
  const notBeforeDate = new Date(Date.now() - 86_400_000);
  const notAfterDate = new Date(notBeforeDate.getTime() + TEN_YEARS_MS);
  const common = { keyType: 'rsa' as const, keySize: 2048, algorithm: 'sha256', notBeforeDate, notAfterDate };
  const root = await generate([{ name: 'commonName', value: 'Root Certification Authority' }], {
    ...common,
    extensions: [{ name: 'basicConstraints', cA: true, critical: true }, { name: 'keyUsage', keyCertSign: true, cRLSign: true }],
  });
  const ca = { key: root.private, cert: root.cert };
  const leaf = [{ name: 'basicConstraints' as const, cA: false }, { name: 'keyUsage' as const, digitalSignature: true, keyEncipherment: true }];
  const [host, device] = await Promise.all([
    generate([{ name: 'commonName', value: 'Host' }], { ...common, ca, extensions: leaf }),
    generate([{ name: 'commonName', value: 'Device' }], { ...common, ca, extensions: leaf }),
  ]);
  const mac = [...Array(6)].map(() => Math.floor(Math.random() * 256).toString(16).padStart(2, '0')).join(':');
  return {
    hostId: randomUUID().toUpperCase(),
    systemBuid,
    rootCertificate: root.cert,
    rootPrivateKey: root.private,
    hostCertificate: host.cert,
    hostPrivateKey: host.private,
    deviceCertificate: device.cert,
    devicePrivateKey: device.private,
    wifiMacAddress: mac,
  };
}

/** The pair record as usbmuxd keeps it (/var/lib/lockdown/<UDID>.plist): PEM blobs as <data>. */
export function pairRecordOf(pairing: Pairing): Buffer {
  return encodePlist({
    DeviceCertificate: Buffer.from(pairing.deviceCertificate),
    EscrowBag: Buffer.alloc(32, 7),
    HostCertificate: Buffer.from(pairing.hostCertificate),
    HostID: pairing.hostId,
    HostPrivateKey: Buffer.from(pairing.hostPrivateKey),
    RootCertificate: Buffer.from(pairing.rootCertificate),
    RootPrivateKey: Buffer.from(pairing.rootPrivateKey),
    SystemBUID: pairing.systemBuid,
    WiFiMACAddress: pairing.wifiMacAddress,
  });
}
