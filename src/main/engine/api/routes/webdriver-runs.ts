import { Type } from 'typebox';
import { Uuid } from '../../../../shared/api/common.js';
import { WebDriverRunList } from '../../../../shared/api/webdriver.js';
import { iso } from '../../domain/time.js';
import type { WebDriverRuns } from '../../services/webdriver.js';
import { BEARER, OrganizationHeader, responses, scopeOf, type App } from '../http.js';

/** The WebDriver sessions running on a session's phones, with their commands: what the session's page shows live. */
export function webDriverRunRoutes(app: App, runs: WebDriverRuns): void {
  app.get('/sessions/:sessionId/webdriver-runs', {
    schema: {
      tags: ['Extensions'],
      operationId: 'listWebDriverRuns',
      summary: 'The WebDriver sessions (/wd/hub) running on this session\'s phones, with their latest commands',
      security: BEARER,
      headers: OrganizationHeader,
      params: Type.Object({ sessionId: Uuid }),
      response: responses({ 200: WebDriverRunList }, [401, 403, 404]),
    },
  }, (req) => ({
    object: 'list' as const,
    data: runs.runsOf(scopeOf(req), req.params.sessionId).map((run) => ({
      id: run.id,
      serial: run.serial,
      deviceName: run.deviceName,
      platform: run.platform,
      testResultId: run.testResultId,
      createdBy: run.createdBy,
      startedAt: iso(run.startedAt),
      lastCommandAt: iso(run.lastCommandAt),
      newCommandTimeoutSeconds: run.newCommandTimeoutMs / 1000,
      commands: run.commands.map((c) => ({ ...c, at: iso(c.at) })),
    })),
  }));

  app.post('/sessions/:sessionId/webdriver-runs/:runId/takeover', {
    schema: {
      tags: ['Extensions'],
      operationId: 'takeOverWebDriverRun',
      summary: 'Take over a phone a WebDriver run drives: the run ends as interrupted, and the phone stays in the session',
      description: 'While a WebDriver run drives a phone, the phone is watch-only for everyone: its control routes (actions, install, reboot, files, shell) and remote connect answer 409 webdriver_running. Taking it over is the deliberate step that ends the run (its test result becomes interrupted, with the reason "taken over by <email>"; its video, logs and last screenshot are kept) and leaves the phone in_use in this session. A run that already ended is 404.',
      security: BEARER,
      headers: OrganizationHeader,
      params: Type.Object({ sessionId: Uuid, runId: Uuid }),
      response: responses({ 204: Type.Null() }, [401, 403, 404]),
    },
  }, async (req, reply) => {
    await runs.takeOver(scopeOf(req), req.params.sessionId, req.params.runId);
    return reply.code(204).send();
  });
}
