import type { Socket } from 'node:net';
import { PlistChannel } from '../../protocols/apple/plist-wire.js';

export const DIAGNOSTICS_RELAY_SERVICE = 'com.apple.mobile.diagnostics_relay';

/** What diagnostics_relay needs of its phone. */
export interface DiagnosticsHost {
  /** Turns the phone off and on again: it leaves the bus and comes back booted afresh. */
  restart(): void;
  /** The phone's battery as the GasGauge diagnostics report it. */
  gasGauge(): Record<string, unknown>;
}

/**
 * com.apple.mobile.diagnostics_relay, as libimobiledevice's diagnostics_relay.c and pymobiledevice3's
 * DiagnosticsService speak it: length-prefixed plists, `{Request: name, ...}` answered `{Status: 'Success' | ...}`.
 * `Restart` with `WaitForDisconnect` restarts once the host hangs up (after its `Goodbye`), so that the host reads the
 * answer first, as idevicediagnostics does; without it the phone restarts right after answering.
 */
export function serveDiagnosticsRelay(socket: Socket, host: DiagnosticsHost): void {
  let restartOnHangUp = false;
  socket.on('error', () => undefined);
  socket.once('close', () => {
    if (restartOnHangUp) host.restart();
  });
  const channel = new PlistChannel(socket, (request) => {
    switch (request.Request) {
      case 'Restart':
        channel.send({ Status: 'Success' });
        if (request.WaitForDisconnect === true) restartOnHangUp = true;
        // The answer leaves before the phone goes down.
        else setImmediate(() => host.restart());
        return;
      case 'GasGauge':
        return channel.send({ Status: 'Success', Diagnostics: { GasGauge: host.gasGauge() } });
      case 'Goodbye':
        channel.send({ Status: 'Success' });
        socket.end();
        return;
      default:
        // What the phone answers to a request it does not know (Sleep, Shutdown and the rest are not simulated).
        return channel.send({ Status: 'UnknownRequest' });
    }
  });
}
