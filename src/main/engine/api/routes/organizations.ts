import { Type } from 'typebox';
import { List, Uuid } from '../../../../shared/api/common.js';
import { ChangeRoleBody, Member, Organization, OrganizationBody } from '../../../../shared/api/organizations.js';
import type { Organizations } from '../../services/organizations.js';
import { BEARER, OrganizationHeader, callerOf, responses, scopeOf, type App } from '../http.js';
import { list } from '../presenters/common.js';
import { presentMember, presentOrganization } from '../presenters/organizations.js';

export function organizationRoutes(app: App, organizations: Organizations): void {
  const tags = ['Organizations'];
  const OrgParams = Type.Object({ id: Uuid });

  app.get('/organizations', {
    schema: { tags, operationId: 'listOrganizations', summary: 'My organizations with my role in each', security: BEARER, headers: OrganizationHeader, response: responses({ 200: List(Organization) }, [401, 403, 500]) },
  }, (req) => {
    // Every request acts on one organization: an X-Organization-Id the caller may not use is refused here too.
    scopeOf(req);
    const caller = callerOf(req);
    return list(organizations.listOrganizations(caller).map((o) => presentOrganization(o, caller.user.id)));
  });

  app.post('/organizations', {
    schema: { tags, operationId: 'createOrganization', summary: 'Create an organization; I become its admin', security: BEARER, body: OrganizationBody, response: responses({ 201: Organization }, [400, 401, 409]) },
  }, (req, reply) => reply.code(201).send(presentOrganization(organizations.createOrganization(callerOf(req), req.body.name))));

  app.patch('/organizations/:id', {
    schema: { tags, operationId: 'renameOrganization', summary: 'Rename an organization (admin, not Personal)', security: BEARER, params: OrgParams, body: OrganizationBody, response: responses({ 200: Organization }, [400, 401, 403, 409]) },
  }, (req) => presentOrganization(organizations.renameOrganization(callerOf(req), req.params.id, req.body.name)));

  app.delete('/organizations/:id', {
    schema: { tags, operationId: 'deleteOrganization', summary: 'Delete an organization I am the sole admin member of', security: BEARER, params: OrgParams, response: responses({ 204: Type.Null() }, [401, 403, 409]) },
  }, (req, reply) => {
    organizations.deleteOrganization(callerOf(req), req.params.id);
    return reply.code(204).send();
  });

  app.get('/organizations/:id/members', {
    schema: { tags: ['Members'], operationId: 'listMembers', summary: 'Active members of an organization I belong to', security: BEARER, params: OrgParams, response: responses({ 200: List(Member) }, [401, 403, 404, 500]) },
  }, (req) => list(organizations.listMembers(callerOf(req), req.params.id).map(presentMember)));

  app.patch('/organizations/:id/members/:userId', {
    schema: { tags: ['Members'], operationId: 'changeMemberRole', summary: 'Change another member\'s role (admin); applies on their next request', security: BEARER, params: Type.Object({ id: Uuid, userId: Uuid }), body: ChangeRoleBody, response: responses({ 200: Member }, [400, 401, 403, 404]) },
  }, (req) => presentMember(organizations.changeMemberRole(callerOf(req), req.params.id, req.params.userId, req.body.role)));

  app.delete('/organizations/:id/members/:userId', {
    schema: { tags: ['Extensions'], operationId: 'removeMember', summary: 'Remove a member (admin); yourself too, while another admin stays. 409 last_admin', security: BEARER, params: Type.Object({ id: Uuid, userId: Uuid }), response: responses({ 204: Type.Null() }, [401, 403, 404, 409]) },
  }, (req, reply) => {
    organizations.removeMember(callerOf(req), req.params.id, req.params.userId);
    return reply.code(204).send();
  });
}
