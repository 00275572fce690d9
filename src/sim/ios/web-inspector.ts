import type { Duplex } from 'node:stream';
import { PlistChannel, type PlistDict } from '../../protocols/apple/plist-wire.js';

export const WEB_INSPECTOR_SERVICE = 'com.apple.webinspector';

/**
 * webinspectord, as lockdown starts it (over TLS): the Web Inspector's RPC in length-prefixed plists, each message a
 * `__selector` with its `__argument`. A host that names itself (`_rpc_reportIdentifier:`) is told the applications
 * (and drivers) that have something to inspect: none here, since no app on this phone has a web view (Safari's pages
 * are drawn natively), so Appium's context list is NATIVE_APP alone, as on a phone with no web content open.
 */
export function serveWebInspector(stream: Duplex): void {
  stream.on('error', () => undefined);
  const channel = new PlistChannel(stream, (message) => {
    if (message.__selector !== '_rpc_reportIdentifier:') return;
    const send = (selector: string, argument: PlistDict) => channel.send({ __selector: selector, __argument: argument });
    send('_rpc_reportConnectedApplicationList:', { WIRApplicationDictionaryKey: {} });
    send('_rpc_reportConnectedDriverList:', { WIRDriverDictionaryKey: {} });
  });
}
