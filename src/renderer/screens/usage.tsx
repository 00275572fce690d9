import type { Balance } from '../../shared/api/organizations.js';
import { DEFAULT_PLANS } from '../../shared/plans.js';
import { api, useAuth } from '../app-context.js';
import { LabUsageReport, UsageReport } from '../components/usage-report.js';
import { ErrorBanner, fmtTime, Page, Spinner, useLoad } from '../ui.js';

const hours = (s: number) => `${(s / 3600).toFixed(s < 36000 ? 1 : 0)} h`;

interface Bar {
  resource: string;
  used: number | undefined;
  remaining: number;
}

/**
 * Seconds used and remaining per resource as stacked horizontal bars, in plain SVG. Used is the plan's allowance
 * minus what remains; a negative remainder is overage on a paid plan.
 */
export function UsageChart({ bars }: { bars: Bar[] }) {
  const W = 560;
  const ROW = 46;
  const LABEL = 90;
  const max = Math.max(1, ...bars.map((b) => (b.used ?? 0) + Math.max(0, b.remaining)));
  const x = (s: number) => (s / max) * (W - LABEL - 10);
  return (
    <svg className="chart" viewBox={`0 0 ${W} ${bars.length * ROW + 28}`} role="img" aria-label={bars.map((b) => `${b.resource}: ${b.used === undefined ? '' : `${hours(b.used)} used, `}${hours(b.remaining)} remaining`).join('; ')}>
      {bars.map((b, i) => {
        const y = i * ROW + 8;
        const used = Math.max(0, b.used ?? 0);
        return (
          <g key={b.resource}>
            <text x={0} y={y + 18} className="chart-label">{b.resource}</text>
            <rect x={LABEL} y={y} width={x(used)} height={24} className="bar-used" />
            <rect x={LABEL + x(used)} y={y} width={x(Math.max(0, b.remaining))} height={24} className={b.remaining < 0 ? 'bar-overage' : 'bar-remaining'} />
            <text x={LABEL} y={y + 38} className="chart-note">{b.used !== undefined && `${hours(b.used)} used · `}{hours(b.remaining)} {b.remaining < 0 ? 'over' : 'remaining'}</text>
          </g>
        );
      })}
      <g transform={`translate(${LABEL}, ${bars.length * ROW + 14})`}>
        <rect width={10} height={10} className="bar-used" /><text x={14} y={9} className="chart-note">used</text>
        <rect x={60} width={10} height={10} className="bar-remaining" /><text x={74} y={9} className="chart-note">remaining</text>
      </g>
    </svg>
  );
}

export function barsOf(balance: Balance): Bar[] {
  const plan = DEFAULT_PLANS[balance.plan];
  return (['devices', 'instances'] as const).map((resource) => ({
    resource,
    used: plan ? plan[resource] - balance.secondsRemaining[resource] : undefined,
    remaining: balance.secondsRemaining[resource],
  }));
}

export function UsageScreen() {
  const balance = useLoad(() => api.balance(), [], 30_000);
  const labOwner = useAuth((s) => s.user?.labOwner);
  const b = balance.data;
  return (
    <Page title="Usage">
      <ErrorBanner error={balance.error} />
      {!b ? balance.loading && <Spinner label="Loading the balance" /> : (
        <>
          {/* The lab is the owner's own: no plan applies to them, so none is named; the allowance is theirs to set. */}
          {labOwner ? (
            <p>
              Period {fmtTime(b.period.start)} to {fmtTime(b.period.end)} · This is your lab: no plan applies to you. The
              allowance below is the one you set for this organization, under Settings → Plan.
            </p>
          ) : <p>
            Plan <strong>{b.plan}</strong> · period {fmtTime(b.period.start)} to {fmtTime(b.period.end)}
            {b.subscription && <> · subscription {b.subscription.status}{b.subscription.cancelAtPeriodEnd && ', ends with the period'}</>}
            {b.overageCapUsd > 0 && <> · overage cap ${b.overageCapUsd}</>}
          </p>}
          <UsageChart bars={barsOf(b)} />
          <p className="muted plan-meaning">
            In a private lab the plan is bookkeeping, not a bill: it is the allowance of phone and Mac time the lab owner
            sets for this organization (Settings → Plan). At zero nothing is stopped or refused and nothing is charged;
            the time goes on being counted, shown as over, so that the owner can see who uses the lab and change the
            plan. How many phones and Macs an organization holds at once is limited separately, by the lab's quotas.
          </p>
        </>
      )}
      <UsageReport />
      {labOwner && <LabUsageReport />}
    </Page>
  );
}
