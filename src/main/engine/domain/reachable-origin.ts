/** A host a browser resolves to this machine alone: localhost, *.localhost, 127.0.0.0/8, ::1. */
const LOOPBACK_HOST = /^(?:localhost|[^:]+\.localhost|127(?:\.\d{1,3}){3}|\[::1\])(?::\d+)?$/i;

/**
 * The origin a link the lab hands out (an invitation, a remote-connect command, the WebDriver URL) must carry so that
 * its reader can open it. `request` is the origin the asker reached the lab at, `lanUrls` LAN sharing's origins
 * (empty while it is off). A reader who came from elsewhere than loopback reached the lab at that origin (its Host
 * passed the host check), so it works for them and for their teammates beside them. A loopback reader is the lab's
 * own desk, handing the link to someone on another machine: they get LAN sharing's first origin when it is on; with
 * sharing off, loopback is all the lab serves.
 */
export function reachableOrigin(request: string, lanUrls: readonly string[]): string {
  const host = request.replace(/^[a-z]+:\/\//i, '');
  if (!LOOPBACK_HOST.test(host)) return request;
  return lanUrls[0] ?? request;
}
