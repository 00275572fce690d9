import { InstallBody, InstallResult } from '../../../../shared/api/files.js';
import type { EngineContext } from '../../services/context.js';
import { installFile } from '../../services/installs.js';
import { BEARER, OrganizationHeader, responses, scopeOf, type App } from '../http.js';
import { DeviceParams } from './devices.js';

export function installRoutes(app: App, ctx: EngineContext): void {
  app.post('/sessions/:sessionId/devices/:deviceId/install', {
    schema: { tags: ['Extensions'], operationId: 'installApp', summary: 'Install a stored file (a ready app of your organization) on an in_use device', description: 'file is a file id or file:<fileId>. An unknown or expired file is 404 file_not_found; an app of the other platform is 400 wrong_platform; a file not ready yet is 409 file_not_ready. The app is uninstalled when the device is released.', security: BEARER, headers: OrganizationHeader, params: DeviceParams, body: InstallBody, response: responses({ 200: InstallResult }, [400, 401, 403, 404, 409]) },
  }, (req) => installFile(ctx, scopeOf(ctx, req), req.params.sessionId, req.params.deviceId, req.body));
}
