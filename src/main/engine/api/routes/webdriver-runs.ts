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
}
