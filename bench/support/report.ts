/** One measured figure, next to the baseline measured in the same run. */
export interface Figure {
  benchmark: string;
  figure: string;
  value: string;
  baseline: string;
  /** value / baseline */
  ratio: string;
  target: string;
  /** Whether the target was met (a figure whose target is 'reported' has none: printed as -). */
  met: boolean;
}

export interface Benchmark {
  name: string;
  title: string;
  run(): Promise<Figure[]>;
}

export const median = (xs: readonly number[]): number => percentile(xs, 50);

/** Nearest-rank percentile. */
export function percentile(xs: readonly number[], p: number): number {
  if (xs.length === 0) throw new Error('no samples');
  const sorted = [...xs].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))]!;
}

export const fmtMs = (ms: number): string => `${ms < 10 ? ms.toFixed(2) : ms.toFixed(0)} ms`;
export const fmtMb = (mb: number): string => `${mb.toFixed(1)} MB`;
export const fmtRps = (rps: number): string => `${Math.round(rps).toLocaleString('en-US')} req/s`;
export const fmtRatio = (value: number, baseline: number): string => `${(value / baseline).toFixed(2)}x`;

export const detail = (line: string): void => console.log(`  ${line}`);

export function printTable(figures: readonly Figure[]): void {
  const header = ['benchmark', 'figure', 'value', 'baseline (same run)', 'ratio', 'target', 'met'];
  printRows(header, figures.map((f) => [f.benchmark, f.figure, f.value, f.baseline, f.ratio, f.target, f.target === 'reported' ? '-' : f.met ? 'yes' : 'NO']));
}

/** A plain-text table, columns padded to their widest cell. */
export function printRows(header: string[], rows: string[][]): void {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
  const line = (cells: string[]) => cells.map((c, i) => c.padEnd(widths[i]!)).join(' | ').trimEnd();
  console.log(line(header));
  console.log(widths.map((w) => '-'.repeat(w)).join('-|-'));
  for (const row of rows) console.log(line(row));
}
