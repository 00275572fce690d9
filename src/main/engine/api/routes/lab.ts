import { LabSettings, LabSettingsPatch } from '../../../../shared/api/account.js';
import { Health } from '../../../../shared/api/common.js';
import type { LabOwner } from '../../services/lab-owner.js';
import type { LabSettingsService } from '../../services/lab-settings.js';
import { BEARER, callerOf, responses, type App } from '../http.js';

/** Lab administration: for the lab owner (the first account) with an interactive token. */
export function labRoutes(app: App, settings: LabSettingsService, labOwner: LabOwner, version: string): void {
  const tags = ['Extensions'];

  app.get('/health', {
    config: { public: true },
    schema: { tags, operationId: 'health', summary: 'Liveness; no credentials needed', response: { 200: Health } },
  }, () => ({ status: 'ok' as const, version }));

  app.get('/lab/settings', {
    schema: { tags, operationId: 'getLabSettings', summary: 'Lab settings (lab owner)', security: BEARER, response: responses({ 200: LabSettings }, [401, 403]) },
  }, (req) => {
    labOwner.require(callerOf(req));
    return settings.get();
  });

  app.patch('/lab/settings', {
    schema: { tags, operationId: 'updateLabSettings', summary: 'Change lab settings: sign-up, LAN sharing, the adb address, quotas, plain remote-connect on the LAN (lab owner); only the fields given change', security: BEARER, body: LabSettingsPatch, response: responses({ 200: LabSettings }, [400, 401, 403, 409]) },
  }, (req) => {
    labOwner.require(callerOf(req));
    return settings.update(req.body);
  });
}
