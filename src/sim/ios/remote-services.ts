import type { Duplex } from 'node:stream';
import type { SimulatedIPhone } from './simulated-iphone.js';

/**
 * What an iOS 17.4+ phone serves inside its CoreDeviceProxy tunnel, by TCP port on the phone's tunnel address:
 * RemoteServiceDiscovery (RSD, RemoteXPC over HTTP/2 framing) and the services it lists (testmanagerd.remote,
 * coredevice.appservice, ...). The tunnel's TCP endpoint (tunnel/) asks `listener(port)` for each SYN; a port with no
 * listener is answered with a reset, as a phone's closed port is.
 *
 * (Contract between the tunnel transport and the RemoteXPC services; the services fill this in.)
 */
export class RemoteServices {
  /** RSD's port, which the CDTunnel handshake announces as serverRSDPort. */
  readonly rsdPort = 58783;

  constructor(readonly phone: SimulatedIPhone) {}

  /** Who accepts a connection to `port` inside the tunnel, or undefined for a closed port. */
  listener(port: number): ((socket: Duplex) => void) | undefined {
    void port;
    return undefined;
  }
}
