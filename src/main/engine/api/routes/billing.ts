import { Balance, SetPlanBody } from '../../../../shared/api/organizations.js';
import { balance, setPlan } from '../../services/billing.js';
import type { EngineContext } from '../../services/context.js';
import { BEARER, OrganizationHeader, responses, scopeOf, type App } from '../http.js';
import { presentBalance } from '../presenters/organizations.js';

export function billingRoutes(app: App, ctx: EngineContext): void {
  app.get('/billing/balance', {
    schema: { tags: ['Billing'], operationId: 'getBalance', summary: 'Plan, period and seconds remaining per metered resource', security: BEARER, headers: OrganizationHeader, response: responses({ 200: Balance }, [401, 403]) },
  }, (req) => presentBalance(balance(ctx, scopeOf(req))));

  app.put('/billing/plan', {
    schema: { tags: ['Extensions'], operationId: 'setPlan', summary: 'Set the organization\'s plan from the engine config (admin)', security: BEARER, headers: OrganizationHeader, body: SetPlanBody, response: responses({ 200: Balance }, [400, 401, 403]) },
  }, (req) => presentBalance(setPlan(ctx, scopeOf(req), req.body.plan, req.body.cancelAtPeriodEnd)));
}
