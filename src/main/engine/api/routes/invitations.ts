import { Type } from 'typebox';
import { List, Uuid } from '../../../../shared/api/common.js';
import { Invitation, InvitationSecret, InviteBody, SentInvitation } from '../../../../shared/api/organizations.js';
import type { Invitations } from '../../services/invitations.js';
import { BEARER, callerOf, responses, type App } from '../http.js';
import { list } from '../presenters/common.js';
import { presentInvitation } from '../presenters/organizations.js';
import { readerOrigin } from '../reader-origin.js';

export function invitationRoutes(app: App, invitations: Invitations): void {
  const tags = ['Invitations'];
  const InvitationParams = Type.Object({ invitationId: Uuid });
  const OrgParams = Type.Object({ id: Uuid });
  const sent = (origin: string, row: Parameters<Invitations['linkOf']>[0]) => ({ ...presentInvitation(row), link: invitations.linkOf(row, origin) });

  // The invitation's page reads this before anyone signs in: the secret in its link is the credential.
  app.get('/auth/invitations/:secret', {
    config: { public: true, throttle: 'invitation' },
    schema: { tags: ['Extensions'], operationId: 'getInvitationBySecret', summary: 'An invitation by the secret in its link: who invited whom to which organization, with which role', params: Type.Object({ secret: InvitationSecret }), response: responses({ 200: Invitation }, [404, 429]) },
  }, (req) => presentInvitation(invitations.bySecret(req.params.secret)));

  app.get('/invitations', {
    schema: { tags, operationId: 'listMyInvitations', summary: 'Pending, unexpired invitations addressed to me', security: BEARER, response: responses({ 200: List(Invitation) }, [401, 403, 500]) },
  }, (req) => list(invitations.listMyInvitations(callerOf(req)).map(presentInvitation)));

  app.post('/invitations/:invitationId/accept', {
    config: { throttle: 'invitation' },
    schema: { tags, operationId: 'acceptInvitation', summary: 'Accept an invitation and join with its role', security: BEARER, params: InvitationParams, response: responses({ 204: Type.Null() }, [401, 403, 404]) },
  }, (req, reply) => {
    invitations.acceptInvitation(callerOf(req), req.params.invitationId);
    return reply.code(204).send();
  });

  app.post('/invitations/:invitationId/reject', {
    schema: { tags, operationId: 'rejectInvitation', summary: 'Reject an invitation', security: BEARER, params: InvitationParams, response: responses({ 204: Type.Null() }, [401, 403, 404]) },
  }, (req, reply) => {
    invitations.rejectInvitation(callerOf(req), req.params.invitationId);
    return reply.code(204).send();
  });

  app.get('/organizations/:id/invitations', {
    schema: { tags, operationId: 'listOrganizationInvitations', summary: 'Pending invitations of the organization (admin)', security: BEARER, params: OrgParams, response: responses({ 200: List(SentInvitation) }, [401, 403, 404]) },
  }, (req) => list(invitations.listOrganizationInvitations(callerOf(req), req.params.id).map((row) => sent(readerOrigin(req), row))));

  app.post('/organizations/:id/invitations', {
    schema: { tags, operationId: 'inviteMember', summary: 'Invite an email with a role (admin)', security: BEARER, params: OrgParams, body: InviteBody, response: responses({ 201: SentInvitation }, [400, 401, 403, 404, 409]) },
  }, (req, reply) => reply.code(201).send(sent(readerOrigin(req), invitations.inviteMember(callerOf(req), req.params.id, req.body.email, req.body.role))));

  app.delete('/organizations/:id/invitations/:invitationId', {
    schema: { tags, operationId: 'revokeInvitation', summary: 'Revoke a pending invitation (admin)', security: BEARER, params: Type.Object({ id: Uuid, invitationId: Uuid }), response: responses({ 204: Type.Null() }, [401, 403, 404]) },
  }, (req, reply) => {
    invitations.revokeInvitation(callerOf(req), req.params.id, req.params.invitationId);
    return reply.code(204).send();
  });
}
