import { LabSettings, LabSettingsPatch } from '../../../../shared/api/account.js';
import { Health } from '../../../../shared/api/common.js';
import type { Caller, EngineContext } from '../../services/context.js';
import { labSettings, requireLabOwner, updateLabSettings } from '../../services/lab.js';
import { BEARER, callerOf, responses, type App } from '../http.js';

/** Lab administration: for the lab owner (the first account) with an interactive token. */
export function labRoutes(app: App, ctx: EngineContext, version: string): void {
  const tags = ['Extensions'];
  const requireOwner = (caller: Caller) => requireLabOwner(ctx, caller);

  app.get('/health', {
    config: { public: true },
    schema: { tags, operationId: 'health', summary: 'Liveness; no credentials needed', response: { 200: Health } },
  }, () => ({ status: 'ok' as const, version }));

  app.get('/lab/settings', {
    schema: { tags, operationId: 'getLabSettings', summary: 'Lab settings (lab owner)', security: BEARER, response: responses({ 200: LabSettings }, [401, 403]) },
  }, (req) => {
    requireOwner(callerOf(req));
    return labSettings(ctx);
  });

  app.patch('/lab/settings', {
    schema: { tags, operationId: 'updateLabSettings', summary: 'Change lab settings: sign-up, LAN sharing, the adb address, quotas (lab owner); only the fields given change', security: BEARER, body: LabSettingsPatch, response: responses({ 200: LabSettings }, [400, 401, 403]) },
  }, (req) => {
    requireOwner(callerOf(req));
    return updateLabSettings(ctx, req.body);
  });
}
