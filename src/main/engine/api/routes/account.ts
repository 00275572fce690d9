import { Type } from 'typebox';
import { AuthToken, LoginBody, SignupBody, User } from '../../../../shared/api/account.js';
import { iso } from '../../domain/time.js';
import type { Accounts } from '../../services/accounts.js';
import { requireInteractive, type Auth } from '../../services/auth.js';
import type { LabOwner } from '../../services/lab-owner.js';
import type { Caller } from '../../services/scope.js';
import { BEARER, callerOf, responses, type App } from '../http.js';
import { presentUser } from '../presenters/account.js';

/** Account (spec) plus the login and sign-up extensions that issue interactive tokens. */
export function accountRoutes(app: App, accounts: Accounts, auth: Auth, labOwner: LabOwner): void {
  const tokenFor = async (user: Caller['user']) => {
    const { token, expiresAt } = await auth.issueToken(user);
    return { token, expiresAt: iso(expiresAt), user: presentUser(user, labOwner.id()) };
  };

  app.get('/me', {
    schema: { tags: ['Account'], operationId: 'getMe', summary: 'The current user', security: BEARER, response: responses({ 200: User }, [401]) },
  }, (req) => presentUser(callerOf(req).user, labOwner.id()));

  app.delete('/me', {
    schema: {
      tags: ['Account'],
      operationId: 'deleteMe',
      summary: 'Delete the account and its Personal organization',
      security: BEARER,
      response: responses({ 204: Type.Null() }, [401, 403, 409]),
    },
  }, async (req, reply) => {
    const caller = callerOf(req);
    requireInteractive(caller);
    accounts.deleteAccount(caller.user);
    return reply.code(204).send();
  });

  app.post('/auth/login', {
    config: { public: true, throttle: 'login' },
    schema: {
      tags: ['Extensions'],
      operationId: 'login',
      summary: 'Exchange email and password for an interactive token',
      body: LoginBody,
      response: responses({ 200: AuthToken }, [400, 401, 429]),
    },
  }, async (req) => tokenFor(await accounts.login(req.body.email, req.body.password)));

  app.post('/auth/signup', {
    config: { public: true, throttle: 'signup' },
    schema: {
      tags: ['Extensions'],
      operationId: 'signup',
      summary: 'Create an account with its Personal organization (open unless the lab owner closed sign-up, or with an invitation\'s secret)',
      description: 'With `invitation`, the secret of an invitation\'s link, the invited email signs up even while sign-up is invitation-only, and is a member of the inviting organization at once: 403 invitation_email_mismatch for another email, 404 invitation_not_found, invitation_used, invitation_revoked or invitation_expired for a link that no longer opens.',
      body: SignupBody,
      response: responses({ 201: AuthToken }, [400, 403, 404, 409, 429]),
    },
  }, async (req, reply) => reply.code(201).send(await tokenFor(await accounts.signup(req.body))));
}
