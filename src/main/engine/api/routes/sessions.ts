import { Type } from 'typebox';
import { List, Uuid } from '../../../../shared/api/common.js';
import { Session, SessionListQuery } from '../../../../shared/api/sessions.js';
import type { EngineContext } from '../../services/context.js';
import { createSession, getSession, listSessions } from '../../services/sessions.js';
import { BEARER, OrganizationHeader, responses, scopeOf, type App } from '../http.js';
import { page } from '../presenters/common.js';
import { presentSession } from '../presenters/sessions.js';

export function sessionRoutes(app: App, ctx: EngineContext): void {
  const tags = ['Sessions'];

  app.get('/sessions', {
    schema: { tags, operationId: 'listSessions', summary: 'Sessions, newest first, cursor paginated', security: BEARER, headers: OrganizationHeader, querystring: SessionListQuery, response: responses({ 200: List(Session) }, [400, 401, 403]) },
  }, (req) => {
    const { limit = 100, before, days } = req.query;
    const result = listSessions(ctx, scopeOf(req), { limit, before: before ? Date.parse(before) : undefined, days });
    return page(result.sessions.map(presentSession), result.nextCursor);
  });

  app.post('/sessions', {
    schema: { tags, operationId: 'createSession', summary: 'Create an empty session', security: BEARER, headers: OrganizationHeader, response: responses({ 201: Session }, [401, 403]) },
  }, (req, reply) => reply.code(201).send(presentSession(createSession(ctx, scopeOf(req)))));

  app.get('/sessions/:sessionId', {
    schema: { tags, operationId: 'getSession', summary: 'A session with its devices and instances', security: BEARER, headers: OrganizationHeader, params: Type.Object({ sessionId: Uuid }), response: responses({ 200: Session }, [401, 403, 404]) },
  }, (req) => presentSession(getSession(ctx, scopeOf(req), req.params.sessionId)));
}
