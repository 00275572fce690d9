import { Type } from 'typebox';
import { List, Uuid } from '../../../../shared/api/common.js';
import { App as AppSchema, AppListQuery } from '../../../../shared/api/files.js';
import type { FileManager } from '../../services/files.js';
import { BEARER, OrganizationHeader, responses, scopeOf, type App } from '../http.js';
import { page } from '../presenters/common.js';
import { presentApp } from '../presenters/files.js';

/** Apps are read-only: the engine creates and updates them as files become ready. */
export function appRoutes(app: App, files: FileManager): void {
  const tags = ['Apps'];

  app.get('/apps', {
    schema: { tags, operationId: 'listApps', summary: 'Apps (ready files grouped by platform and bundle id), newest first, cursor paginated', security: BEARER, headers: OrganizationHeader, querystring: AppListQuery, response: responses({ 200: List(AppSchema) }, [400, 401, 403]) },
  }, (req) => {
    const { limit = 100, before, platform } = req.query;
    const result = files.listApps(scopeOf(req), { limit, before: before ? Date.parse(before) : undefined, platform });
    return page(result.apps.map(presentApp), result.nextCursor);
  });

  app.get('/apps/:appId', {
    schema: { tags, operationId: 'getApp', summary: 'An app with its files, newest first', security: BEARER, headers: OrganizationHeader, params: Type.Object({ appId: Uuid }), response: responses({ 200: AppSchema }, [401, 403, 404]) },
  }, (req) => presentApp(files.app(scopeOf(req), req.params.appId)));
}
