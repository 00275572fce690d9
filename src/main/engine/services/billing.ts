import { invalid } from '../domain/errors.js';
import { periodContaining, secondsUsed } from '../domain/metering.js';
import type { OrganizationRow } from '../store/organizations.js';
import { requireRole } from './auth.js';
import type { EngineContext, Scope } from './context.js';

export const FREE_PLAN = 'hobby';

/** A paid plan renews at the end of each period unless it was set to cancel at period end. */
export const planRenews = (org: Pick<OrganizationRow, 'plan' | 'cancelAtPeriodEnd'>) =>
  org.plan !== FREE_PLAN && !org.cancelAtPeriodEnd;

export function balance(ctx: EngineContext, scope: Scope) {
  const org = scope.organization;
  const now = ctx.now();
  const period = periodContaining(now);
  const allowance = ctx.config.plans[org.plan] ?? ctx.config.plans[FREE_PLAN]!;
  const remaining = (resource: 'devices' | 'instances') =>
    allowance[resource] - secondsUsed(ctx.stores.usage.intervals(org.id, resource, period.start, period.end), period, now);
  return {
    plan: org.plan,
    period,
    overageCapUsd: allowance.overageCapUsd,
    subscription:
      org.plan === FREE_PLAN ? null : { status: 'active' as const, cancelAtPeriodEnd: org.cancelAtPeriodEnd, currentPeriodEnd: period.end },
    secondsRemaining: { devices: remaining('devices'), instances: remaining('instances') },
  };
}

/** Admin only. Plans are those of the engine config; there is no payment provider in a private lab. */
export function setPlan(ctx: EngineContext, scope: Scope, plan: string, cancelAtPeriodEnd = false) {
  requireRole(scope.role, 'admin');
  if (!ctx.config.plans[plan]) {
    throw invalid('unknown_plan', `Unknown plan "${plan}". Plans: ${Object.keys(ctx.config.plans).join(', ')}.`);
  }
  ctx.stores.organizations.setPlan(scope.organization.id, plan, plan !== FREE_PLAN && cancelAtPeriodEnd);
  return balance(ctx, { ...scope, organization: ctx.stores.organizations.get(scope.organization.id)! });
}
