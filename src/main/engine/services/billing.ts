import { invalid } from '../domain/errors.js';
import { periodContaining, secondsUsed } from '../domain/metering.js';
import type { OrganizationRow } from '../store/organizations.js';
import { requireRole } from './auth.js';
import type { Scope } from './scope.js';
import type { EngineConfig } from '../config.js';
import type { Stores } from '../store/index.js';
import type { Clock } from './scope.js';

export const FREE_PLAN = 'hobby';

/** A paid plan renews at the end of each period unless it was set to cancel at period end. */
export const planRenews = (org: Pick<OrganizationRow, 'plan' | 'cancelAtPeriodEnd'>) =>
  org.plan !== FREE_PLAN && !org.cancelAtPeriodEnd;

export class Billing {
  constructor(
    private readonly stores: Pick<Stores, 'organizations' | 'usage'>,
    private readonly config: Pick<EngineConfig, 'plans'>,
    private readonly now: Clock,
  ) {}

  balance(scope: Scope) {
    const org = scope.organization;
    const now = this.now();
    const period = periodContaining(now);
    const allowance = this.config.plans[org.plan] ?? this.config.plans[FREE_PLAN]!;
    const remaining = (resource: 'devices' | 'instances') =>
      allowance[resource] - secondsUsed(this.stores.usage.intervals(org.id, resource, period.start, period.end), period, now);
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
  setPlan(scope: Scope, plan: string, cancelAtPeriodEnd = false) {
    requireRole(scope.role, 'admin');
    if (!this.config.plans[plan]) {
      throw invalid('unknown_plan', `Unknown plan "${plan}". Plans: ${Object.keys(this.config.plans).join(', ')}.`);
    }
    this.stores.organizations.setPlan(scope.organization.id, plan, plan !== FREE_PLAN && cancelAtPeriodEnd);
    return this.balance({ ...scope, organization: this.stores.organizations.get(scope.organization.id)! });
  }
}
