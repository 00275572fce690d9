import { Type } from 'typebox';
import { List, Uuid } from '../../../../shared/api/common.js';
import { App as AppSchema, AppListQuery, type App as AppView } from '../../../../shared/api/files.js';
import { iso } from '../../domain/time.js';
import type { EngineContext } from '../../services/context.js';
import { versionOf } from '../../services/files.js';
import type { AppRow, FileRow } from '../../store/files.js';
import { BEARER, OrganizationHeader, responses, scopeOf, type App } from '../http.js';
import { page } from '../presenters/common.js';

/** An app as its newest ready file describes it, with every ready file it groups. */
const presentApp = ({ app, files }: { app: AppRow; files: FileRow[] }): AppView => {
  const newest = versionOf(files[0]!);
  return {
    id: app.id,
    platform: app.platform,
    bundleId: app.bundleId,
    name: newest.name ?? app.bundleId,
    latestVersion: newest.version,
    files: files.map((f) => {
      const { version, build } = versionOf(f);
      return { id: f.id, version, build, createdAt: iso(f.createdAt) };
    }),
    createdAt: iso(app.createdAt),
    updatedAt: iso(app.updatedAt),
  };
};

/** Apps are read-only: the engine creates and updates them as files become ready. */
export function appRoutes(app: App, ctx: EngineContext): void {
  const tags = ['Apps'];

  app.get('/apps', {
    schema: { tags, operationId: 'listApps', summary: 'Apps (ready files grouped by platform and bundle id), newest first, cursor paginated', security: BEARER, headers: OrganizationHeader, querystring: AppListQuery, response: responses({ 200: List(AppSchema) }, [400, 401, 403]) },
  }, (req) => {
    const { limit = 100, before, platform } = req.query;
    const result = ctx.files.listApps(scopeOf(req), { limit, before: before ? Date.parse(before) : undefined, platform });
    return page(result.apps.map(presentApp), result.nextCursor);
  });

  app.get('/apps/:appId', {
    schema: { tags, operationId: 'getApp', summary: 'An app with its files, newest first', security: BEARER, headers: OrganizationHeader, params: Type.Object({ appId: Uuid }), response: responses({ 200: AppSchema }, [401, 403, 404]) },
  }, (req) => presentApp(ctx.files.app(scopeOf(req), req.params.appId)));
}
