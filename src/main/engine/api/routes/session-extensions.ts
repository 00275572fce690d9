import { Type } from 'typebox';
import { Uuid } from '../../../../shared/api/common.js';
import { Session, UpdateSessionBody } from '../../../../shared/api/sessions.js';
import type { SessionLifecycle } from '../../services/session-lifecycle.js';
import type { Sessions } from '../../services/sessions.js';
import { BEARER, OrganizationHeader, responses, scopeOf, type App } from '../http.js';
import { presentSession } from '../presenters/sessions.js';

/** Naming and ending a session: beyond the spec, so under the Extensions tag. */
export function sessionExtensionRoutes(app: App, sessions: Sessions, lifecycle: SessionLifecycle): void {
  const tags = ['Extensions'];
  const params = Type.Object({ sessionId: Uuid });

  app.patch('/sessions/:sessionId', {
    schema: { tags, operationId: 'updateSession', summary: 'Name a session (an empty name clears it)', security: BEARER, headers: OrganizationHeader, params, body: UpdateSessionBody, response: responses({ 200: Session }, [400, 401, 403, 404]) },
  }, (req) => {
    const scope = scopeOf(req);
    lifecycle.rename(scope, req.params.sessionId, req.body.name);
    return presentSession(sessions.getSession(scope, req.params.sessionId));
  });

  app.post('/sessions/:sessionId/end', {
    schema: { tags, operationId: 'endSession', summary: 'End a session: release every phone and Mac instance it holds, and take no new ones', description: 'Idempotent. Each phone and instance is released (and cleaned up) as its own release would; allocating into an ended session is 409 session_ended.', security: BEARER, headers: OrganizationHeader, params, response: responses({ 202: Session }, [401, 403, 404]) },
  }, (req, reply) => {
    const scope = scopeOf(req);
    lifecycle.end(scope, req.params.sessionId);
    return reply.code(202).send(presentSession(sessions.getSession(scope, req.params.sessionId)));
  });
}
