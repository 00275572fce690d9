import { LabSettings, LabSettingsPatch } from '../../../../shared/api/account.js';
import { Health } from '../../../../shared/api/common.js';
import type { LabOwner } from '../../services/lab-owner.js';
import type { LabSettingsService } from '../../services/lab-settings.js';
import type { UsageReport } from '../../services/usage.js';
import { LabUsage, LabUsageQuery } from '../../../../shared/api/sharing.js';
import { iso } from '../../domain/time.js';
import { BEARER, callerOf, responses, type App } from '../http.js';
import { served } from '../media.js';

/** Lab administration: for the lab owner (the first account) with an interactive token. */
export function labRoutes(app: App, settings: LabSettingsService, labOwner: LabOwner, usage: UsageReport, version: string): void {
  const tags = ['Extensions'];

  app.get('/health', {
    config: { public: true },
    schema: { tags, operationId: 'health', summary: 'Liveness, and what a signed-out visitor needs to know (whether sign-up is open); no credentials needed', response: { 200: Health } },
  }, () => ({ status: 'ok' as const, version, signupOpen: settings.isSignupOpen() }));

  app.get('/lab/certificate.pem', {
    config: { public: true },
    schema: {
      tags,
      operationId: 'getLabCertificate',
      summary: 'The self-signed certificate of LAN sharing (PEM), for a teammate\'s client to trust; its SHA-256 fingerprint is in the lab settings. No credentials needed: a TLS handshake with the LAN port shows it anyway',
      response: responses({ 200: served<string>(['application/x-pem-file'], 'One X.509 certificate, PEM-encoded.', { type: 'string' }) }, [404]),
    },
  }, (_req, reply) => reply
    .type('application/x-pem-file')
    .header('content-disposition', 'attachment; filename="benchtop-lan-certificate.pem"')
    .header('cache-control', 'no-cache')
    .send(settings.certificatePem()));

  app.get('/lab/settings', {
    schema: { tags, operationId: 'getLabSettings', summary: 'Lab settings (lab owner)', security: BEARER, response: responses({ 200: LabSettings }, [401, 403]) },
  }, (req) => {
    labOwner.require(callerOf(req));
    return settings.get();
  });

  app.patch('/lab/settings', {
    schema: { tags, operationId: 'updateLabSettings', summary: 'Change lab settings: sign-up, LAN sharing, the adb address, quotas, plain remote-connect on the LAN, how long test results\' files are kept, the video of WebDriver runs (lab owner); only the fields given change', security: BEARER, body: LabSettingsPatch, response: responses({ 200: LabSettings }, [400, 401, 403, 409]) },
  }, (req) => {
    labOwner.require(callerOf(req));
    return settings.update(req.body);
  });

  app.get('/lab/usage', {
    schema: { tags, operationId: 'getLabUsage', summary: 'Every organization\'s device time on each phone in a window (default: the last 30 days), lab-wide (lab owner)', security: BEARER, querystring: LabUsageQuery, response: responses({ 200: LabUsage }, [400, 401, 403]) },
  }, (req) => {
    labOwner.require(callerOf(req));
    const time = (value: string | undefined) => (value === undefined ? undefined : Date.parse(value));
    const report = usage.lab({ from: time(req.query.from), to: time(req.query.to) });
    return { from: iso(report.from), to: iso(report.to), data: report.rows.map(({ ms, ...row }) => ({ ...row, seconds: ms / 1000 })) };
  });
}
