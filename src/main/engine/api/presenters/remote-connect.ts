import type { AdbKey, RemoteConnect } from '../../../../shared/api/remote-connect.js';
import { iso } from '../../domain/time.js';
import type { RemoteConnectView } from '../../services/remote-connect.js';
import type { AdbKeyRow } from '../../store/adb-keys.js';

/** An adb key as its owner sees it: the key text itself is not repeated back. */
export const presentAdbKey = (k: AdbKeyRow): AdbKey => ({ id: k.id, title: k.title, fingerprint: k.fingerprint, createdAt: iso(k.createdAt) });

export const presentRemoteConnect = (v: RemoteConnectView, withConnections: boolean): RemoteConnect => ({
  platform: v.platform,
  address: v.address,
  command: v.command,
  ...(v.webDriverAgentUrl ? { webDriverAgentUrl: v.webDriverAgentUrl } : {}),
  ...(v.lanCommand ? { lanCommand: v.lanCommand } : {}),
  ...(withConnections ? { connections: v.connections.map((c) => ({ peer: c.peer, fingerprint: c.fingerprint, since: iso(c.since) })) } : {}),
});
