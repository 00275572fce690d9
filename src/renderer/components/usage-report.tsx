import { useState } from 'react';
import type { Usage } from '../../shared/api/sharing.js';
import { api } from '../app-context.js';
import { Empty, ErrorBanner, Spinner, useAction, useLoad } from '../ui.js';

const DAY_MS = 24 * 3600_000;
const hoursText = (s: number) => (s < 3600 ? `${(s / 60).toFixed(1)} min` : `${(s / 3600).toFixed(1)} h`);

/** Device time per member or phone as horizontal bars, in plain SVG. */
export function UsageBars({ report }: { report: Usage }) {
  const W = 560;
  const ROW = 30;
  const LABEL = 200;
  const max = Math.max(1, ...report.data.map((r) => r.seconds));
  return (
    <svg className="chart" viewBox={`0 0 ${W} ${report.data.length * ROW + 8}`} role="img" aria-label={`Device time by ${report.groupBy}: ${report.data.map((r) => `${r.label || r.key} ${hoursText(r.seconds)}`).join('; ')}`}>
      {report.data.map((r, i) => (
        <g key={r.key} transform={`translate(0, ${i * ROW + 4})`}>
          <text x={0} y={16} className="chart-label">{(r.label || r.key).slice(0, 28)}</text>
          <rect x={LABEL} y={2} height={18} width={Math.max(1, (r.seconds / max) * (W - LABEL - 70))} className="bar-used" />
          <text x={LABEL + (r.seconds / max) * (W - LABEL - 70) + 6} y={16} className="chart-note">{hoursText(r.seconds)}</text>
        </g>
      ))}
    </svg>
  );
}

/** Who used what: device time per member or per phone over the last days, as a chart and a table, and as CSV. */
export function UsageReport() {
  const [groupBy, setGroupBy] = useState<'member' | 'device'>('member');
  const [days, setDays] = useState(30);
  const window = () => ({ from: new Date(Date.now() - days * DAY_MS).toISOString(), to: new Date().toISOString(), groupBy });
  const report = useLoad(() => api.usage(window()), [groupBy, days], 30_000);
  const download = useAction();
  const csv = () => void download.run(async () => {
    const blob = await api.usageCsv(window());
    const link = document.createElement('a');
    link.href = URL.createObjectURL(blob);
    link.download = `benchtop-usage-by-${groupBy}.csv`;
    link.click();
    setTimeout(() => URL.revokeObjectURL(link.href), 10_000);
  });
  const r = report.data;
  return (
    <section className="usage-report" aria-label="Who used what">
      <h2>Who used what</h2>
      <div className="button-row">
        <label>Group by{' '}
          <select aria-label="Group by" value={groupBy} onChange={(e) => setGroupBy(e.target.value as 'member' | 'device')}>
            <option value="member">member</option>
            <option value="device">phone</option>
          </select>
        </label>
        <label>Over the last{' '}
          <select aria-label="Days" value={days} onChange={(e) => setDays(Number(e.target.value))}>
            {[1, 7, 30, 90].map((d) => <option key={d} value={d}>{d} day{d === 1 ? '' : 's'}</option>)}
          </select>
        </label>
        <button type="button" onClick={csv} disabled={download.pending}>Download CSV</button>
      </div>
      <ErrorBanner error={report.error ?? download.error} />
      {!r ? report.loading && <Spinner label="Loading usage" /> : r.data.length === 0 ? <Empty>No phone was held in this period.</Empty> : (
        <>
          <UsageBars report={r} />
          <div className="table-wrap">
            <table className="table" aria-label={`Usage by ${groupBy}`}>
              <thead><tr><th>{groupBy === 'member' ? 'Member' : 'Phone'}</th><th>Allocations</th><th>Time held</th><th>Seconds</th></tr></thead>
              <tbody>
                {r.data.map((row) => (
                  <tr key={row.key}>
                    <td>{row.label || <code>{row.key}</code>}{groupBy === 'device' && <> <code className="muted">{row.key}</code></>}</td>
                    <td>{row.allocations}</td>
                    <td>{hoursText(row.seconds)}</td>
                    <td>{row.seconds}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
        </>
      )}
    </section>
  );
}

/** The lab owner's view of the whole lab: every organization's device time on each phone over the last days. */
export function LabUsageReport() {
  const [days, setDays] = useState(30);
  const report = useLoad(() => api.labUsage({ from: new Date(Date.now() - days * DAY_MS).toISOString(), to: new Date().toISOString() }), [days], 30_000);
  const rows = report.data?.data;
  return (
    <section className="usage-report" aria-labelledby="lab-usage-title">
      <h2 id="lab-usage-title">The whole lab</h2>
      <p className="muted">Every organization&apos;s time on each phone: what only the lab owner sees.</p>
      <div className="button-row">
        <label>Over the last{' '}
          <select aria-label="Days of lab usage" value={days} onChange={(e) => setDays(Number(e.target.value))}>
            {[1, 7, 30, 90].map((d) => <option key={d} value={d}>{d} day{d === 1 ? '' : 's'}</option>)}
          </select>
        </label>
      </div>
      <ErrorBanner error={report.error} />
      {!rows ? report.loading && <Spinner label="Loading the lab's usage" /> : rows.length === 0 ? <Empty>No phone was held in this period.</Empty> : (
        <div className="table-wrap">
          <table className="table" aria-label="Usage by organization and phone">
            <thead><tr><th>Organization</th><th>Phone</th><th>Allocations</th><th>Time held</th></tr></thead>
            <tbody>
              {rows.map((row) => (
                <tr key={`${row.organizationId} ${row.serial}`}>
                  <td>{row.organization}</td>
                  <td>{row.name || <code>{row.serial}</code>} <code className="muted">{row.serial}</code></td>
                  <td>{row.allocations}</td>
                  <td>{hoursText(row.seconds)}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
    </section>
  );
}
