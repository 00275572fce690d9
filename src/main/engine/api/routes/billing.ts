import { Balance, SetPlanBody } from '../../../../shared/api/organizations.js';
import type { Billing } from '../../services/billing.js';
import { BEARER, OrganizationHeader, responses, scopeOf, type App } from '../http.js';
import { presentBalance } from '../presenters/organizations.js';

export function billingRoutes(app: App, billing: Billing): void {
  app.get('/billing/balance', {
    schema: { tags: ['Billing'], operationId: 'getBalance', summary: 'Plan, period and seconds remaining per metered resource', security: BEARER, headers: OrganizationHeader, response: responses({ 200: Balance }, [401, 403]) },
  }, (req) => presentBalance(billing.balance(scopeOf(req))));

  app.put('/billing/plan', {
    schema: { tags: ['Extensions'], operationId: 'setPlan', summary: 'Set the organization\'s plan from the engine config (admin)', security: BEARER, headers: OrganizationHeader, body: SetPlanBody, response: responses({ 200: Balance }, [400, 401, 403]) },
  }, (req) => presentBalance(billing.setPlan(scopeOf(req), req.body.plan, req.body.cancelAtPeriodEnd)));
}
