import { randomUUID } from 'node:crypto';
import type { Duplex } from 'node:stream';
import { RemoteXpcConnection, ROOT_CHANNEL } from '../../../protocols/apple/remote-xpc.js';
import { XPC_FLAGS, XpcUint64, XpcUuid, XpcInt64, type XpcDictionary } from '../../../protocols/apple/xpc.js';

/** What RSD says of the phone: the Properties of its Handshake (a real one lists some 50; these are what hosts read). */
export interface RsdDevice {
  udid: string;
  version: string;
  buildVersion: string;
  productType: string;
}

/** One service RSD lists: its port inside the tunnel, and its Properties as the phone announces them. */
export interface RsdService {
  port: number;
  entitlement: string;
  properties: XpcDictionary;
}

/** The Handshake's MessagingProtocolVersion an iOS 17.4+ phone announces. */
const MESSAGING_PROTOCOL_VERSION = 3;
/** "Modern" RemoteXPC peer, as iOS 17 and 18 announce it. */
const REMOTE_XPC_VERSION_FLAGS = 0x0100000000000006n;

/**
 * RemoteServiceDiscovery on its port: once the host's RemoteXPC init handshake is done, the phone sends one
 * Handshake message on the ROOT_CHANNEL (MessageType, Properties, Services: name -> {Port (a string), Entitlement,
 * Properties}, UUID), which go-ios (`ios rsd ls`, the tunnel agent) and pymobiledevice3 read. A host that sends its
 * own Handshake (pymobiledevice3) gets nothing more; the connection stays open until the host closes it, as the
 * phone keeps it for the tunnel's life.
 */
export function serveRsd(socket: Duplex, device: RsdDevice, services: Map<string, RsdService>, bootSession: string): void {
  const connection = new RemoteXpcConnection(socket, () => undefined);
  connection.onReady(() => {
    const listed: XpcDictionary = {};
    for (const [name, service] of services) {
      listed[name] = { Entitlement: service.entitlement, Port: String(service.port), Properties: service.properties };
    }
    connection.send(ROOT_CHANNEL, {
      flags: XPC_FLAGS.ALWAYS_SET | XPC_FLAGS.DATA_PRESENT,
      body: {
        MessageType: 'Handshake',
        MessagingProtocolVersion: new XpcUint64(MESSAGING_PROTOCOL_VERSION),
        Properties: {
          AppleInternal: false,
          BootSessionUUID: bootSession,
          BuildVersion: device.buildVersion,
          CPUArchitecture: 'arm64e',
          DeviceClass: 'iPhone',
          DeviceSupportsLockdown: true,
          HumanReadableProductVersionString: device.version,
          OSVersion: device.version,
          ProductName: 'iPhone OS',
          ProductType: device.productType,
          RemoteXPCVersionFlags: new XpcUint64(REMOTE_XPC_VERSION_FLAGS),
          SensitivePropertiesVisible: true,
          SerialNumber: device.udid.slice(-12),
          ThinningProductType: device.productType,
          UniqueChipID: new XpcInt64(parseInt(device.udid.slice(-8), 16) || 0),
          UniqueDeviceID: device.udid,
        },
        Services: listed,
        UUID: new XpcUuid(randomUUID()),
      },
    });
  });
}
