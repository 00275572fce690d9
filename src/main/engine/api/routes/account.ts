import { Type } from 'typebox';
import { AuthToken, LoginBody, SignupBody, User } from '../../../../shared/api/account.js';
import { iso } from '../../domain/time.js';
import { deleteAccount, login, signup } from '../../services/accounts.js';
import { issueToken, requireInteractive } from '../../services/auth.js';
import type { EngineContext } from '../../services/context.js';
import { labOwnerId } from '../../services/lab.js';
import type { UserRow } from '../../store/users.js';
import { BEARER, callerOf, responses, type App } from '../http.js';
import { presentUser } from '../presenters/account.js';

/** Account (spec) plus the login and sign-up extensions that issue interactive tokens. */
export function accountRoutes(app: App, ctx: EngineContext): void {
  const tokenFor = async (user: UserRow) => {
    const { token, expiresAt } = await issueToken(ctx, user);
    return { token, expiresAt: iso(expiresAt), user: presentUser(user, labOwnerId(ctx)) };
  };

  app.get('/me', {
    schema: { tags: ['Account'], operationId: 'getMe', summary: 'The current user', security: BEARER, response: responses({ 200: User }, [401]) },
  }, (req) => presentUser(callerOf(req).user, labOwnerId(ctx)));

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
    deleteAccount(ctx, caller.user);
    return reply.code(204).send();
  });

  app.post('/auth/login', {
    config: { public: true },
    schema: {
      tags: ['Extensions'],
      operationId: 'login',
      summary: 'Exchange email and password for an interactive token',
      body: LoginBody,
      response: responses({ 200: AuthToken }, [400, 401]),
    },
  }, async (req) => tokenFor(await login(ctx, req.body.email, req.body.password)));

  app.post('/auth/signup', {
    config: { public: true },
    schema: {
      tags: ['Extensions'],
      operationId: 'signup',
      summary: 'Create an account with its Personal organization (open unless the lab owner closed sign-up)',
      body: SignupBody,
      response: responses({ 201: AuthToken }, [400, 403, 409]),
    },
  }, async (req, reply) => reply.code(201).send(await tokenFor(await signup(ctx, req.body))));
}
