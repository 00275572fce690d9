/**
 * npm run bench -- --compare <ref> [--rounds N] name...: the named benchmarks on this checkout and on <ref>, run
 * interleaved in one run (ref, this, then this, ref, ...), each figure printed next to the same figure of the other
 * checkout with their ratio. A machine that is busier in one minute than the next loads both sides alike, so a
 * regression shows as a ratio rather than as a guess across days and machines.
 *
 * Both sides are measured by this checkout's benchmark code (and its simulated phones); only the engine differs.
 * <ref> is checked out into a temporary git worktree. Its node_modules is this checkout's, hard-linked, when the two
 * package-lock.json are the same; otherwise `npm ci` installs it. Each side builds its bundle and GUI once before
 * anything is timed, so no build falls inside a measurement.
 */
import { execFileSync, spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { printRows } from './report.js';
import { ROOT } from './servers.js';

/** This checkout, whose benchmark code measures both sides. */
const HERE = ROOT;

interface Row {
  benchmark: string;
  figure: string;
  value: string;
  baseline: string;
  ratio: string;
}

const git = (args: string[], cwd = ROOT) => execFileSync('git', args, { cwd, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] }).trim();

/** The first number in a figure ("median 438 ms", "1,234 req/s", "30.4 frames/s"). */
export function numberIn(text: string): number | undefined {
  const match = /-?\d[\d,]*(?:\.\d+)?/.exec(text);
  return match ? Number(match[0].replaceAll(',', '')) : undefined;
}

/** The rows of the summary table that `npm run bench` prints last (report.ts printTable), in any version of it. */
export function parseSummary(output: string): Row[] {
  const lines = output.split('\n');
  const header = lines.findIndex((l) => /^benchmark\s+\| figure\s+\| value/.test(l));
  if (header < 0) return [];
  const rows: Row[] = [];
  for (const line of lines.slice(header + 2)) {
    const cells = line.split(' | ').map((c) => c.trim());
    if (cells.length < 5) break;
    const [benchmark, figure, value, baseline, ratio] = cells as [string, string, string, string, string];
    rows.push({ benchmark, figure, value, baseline, ratio });
  }
  return rows;
}

/** This checkout's benchmarks, run against the engine of the checkout at `root`. */
function run(root: string, args: string[]): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, args, { cwd: HERE, env: { ...process.env, BENCH_ROOT: root }, stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => {
      output += chunk;
      process.stdout.write(chunk.toString().replace(/^(?=.)/gm, '    '));
    });
    child.stderr.on('data', (chunk: Buffer) => process.stderr.write(chunk));
    child.on('error', reject);
    child.on('exit', () => resolve(output));
  });
}

/** Starts `scripts/serve.mjs` once and stops it when it serves: it builds the engine bundle and the GUI if stale. */
async function build(cwd: string): Promise<void> {
  const dataDir = mkdtempSync(join(tmpdir(), 'benchtop-compare-build-'));
  try {
    await new Promise<void>((resolve, reject) => {
      const child = spawn(process.execPath, ['scripts/serve.mjs'], {
        cwd,
        stdio: ['ignore', 'pipe', 'pipe'],
        env: { ...process.env, BENCHTOP_PORT: '0', BENCHTOP_HOST: '127.0.0.1', BENCHTOP_DATA_DIR: dataDir, BENCHTOP_ADB: 'off', BENCHTOP_LOG_LEVEL: 'warn' },
      });
      let output = '';
      child.stdout.on('data', (chunk: Buffer) => {
        output += chunk;
        if (output.includes('Benchtop is serving')) child.kill('SIGTERM');
      });
      child.stderr.on('data', (chunk: Buffer) => (output += chunk));
      child.on('error', reject);
      child.on('exit', () => (output.includes('Benchtop is serving') ? resolve() : reject(new Error(`${cwd}: npm run serve did not start:\n${output}`))));
    });
  } finally {
    rmSync(dataDir, { recursive: true, force: true });
  }
}

/** A worktree of `ref` with node_modules installed; removed by the returned function. */
function checkout(ref: string): { dir: string; remove: () => void } {
  const dir = mkdtempSync(join(tmpdir(), 'benchtop-compare-'));
  git(['worktree', 'add', '--detach', dir, ref]);
  const remove = () => {
    try {
      git(['worktree', 'remove', '--force', dir]);
    } catch {
      rmSync(dir, { recursive: true, force: true });
      git(['worktree', 'prune']);
    }
  };
  try {
    const sameLock = readFileSync(join(ROOT, 'package-lock.json'), 'utf8') === readFileSync(join(dir, 'package-lock.json'), 'utf8');
    if (sameLock) {
      console.log(`  ${ref}: same package-lock.json, node_modules hard-linked from this checkout`);
      execFileSync('cp', ['-al', join(ROOT, 'node_modules'), join(dir, 'node_modules')]);
    } else {
      console.log(`  ${ref}: another package-lock.json, installing with npm ci`);
      execFileSync('npm', ['ci', '--no-audit', '--no-fund'], { cwd: dir, stdio: 'inherit' });
    }
  } catch (error) {
    remove();
    throw error;
  }
  return { dir, remove };
}

export async function compare(ref: string, names: string[], rounds: number): Promise<void> {
  const short = git(['rev-parse', '--short', ref]);
  const refName = short.startsWith(ref) || ref.startsWith(short) ? short : `${ref} (${short})`;
  const here = `this (${git(['rev-parse', '--short', 'HEAD'])}${git(['status', '--porcelain', '--untracked-files=no']) ? '+changes' : ''})`;
  console.log(`Comparing ${here} with ${refName}: ${names.join(', ')}, ${rounds} rounds, interleaved`);
  const other = checkout(ref);
  try {
    console.log('  building both sides once, untimed');
    await build(other.dir);
    await build(ROOT);
    const results = { ref: [] as Row[][], here: [] as Row[][] };
    for (const name of names) {
      for (let round = 0; round < rounds; round++) {
        // The order alternates from round to round, so that neither side always runs on a warmer machine.
        const order = round % 2 === 0 ? (['ref', 'here'] as const) : (['here', 'ref'] as const);
        for (const side of order) {
          console.log(`\n${name}, round ${round + 1} of ${rounds}: ${side === 'ref' ? refName : here}`);
          const output = await run(side === 'ref' ? other.dir : ROOT, ['--import', 'tsx', 'bench/run.ts', name]);
          results[side].push(parseSummary(output));
        }
      }
    }
    printComparison(results, refName, here);
  } finally {
    other.remove();
  }
}

/** The median of each figure's number over the rounds, per side; the ratio is this checkout's over the ref's. */
function printComparison(results: { ref: Row[][]; here: Row[][] }, refName: string, hereName: string): void {
  const key = (r: Row) => `${r.benchmark}\u0000${r.figure}`;
  const collect = (runs: Row[][]) => {
    const by = new Map<string, Row[]>();
    for (const row of runs.flat()) by.set(key(row), [...(by.get(key(row)) ?? []), row]);
    return by;
  };
  const ref = collect(results.ref);
  const here = collect(results.here);
  const mid = (xs: number[]) => {
    const s = [...xs].sort((a, b) => a - b);
    return s.length % 2 ? s[(s.length - 1) / 2]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2;
  };
  const numbers = (rows: Row[] | undefined, field: 'value' | 'ratio') => (rows ?? []).map((r) => numberIn(r[field])).filter((n): n is number => n !== undefined);
  const show = (n: number | undefined) => (n === undefined ? '-' : Number(n.toPrecision(4)).toString());
  console.log(`\nComparison: each number is the median over the rounds; the ratio is this checkout's over ${refName}'s.\n`);
  const rows = [...new Set([...ref.keys(), ...here.keys()])].map((k) => {
    const [benchmark, figure] = k.split('\u0000') as [string, string];
    const [r, h] = [numbers(ref.get(k), 'value'), numbers(here.get(k), 'value')];
    const [rr, hr] = [numbers(ref.get(k), 'ratio'), numbers(here.get(k), 'ratio')];
    // The unit as the figure prints it: "median 438 ms" -> "ms", "30.4 frames/s (p95 ...)" -> "frames/s".
    const unit = (ref.get(k) ?? here.get(k))![0]!.value.replace(/^.*?-?\d[\d,]*(?:\.\d+)?\s*/, '').replace(/\s*\(.*$/, '');
    const rv = r.length ? mid(r) : undefined;
    const hv = h.length ? mid(h) : undefined;
    return [
      benchmark,
      figure,
      `${show(hv)} ${unit}`.trim(),
      `${show(rv)} ${unit}`.trim(),
      rv && hv !== undefined ? `${(hv / rv).toFixed(2)}x` : '-',
      `${show(hr.length ? mid(hr) : undefined)}x`,
      `${show(rr.length ? mid(rr) : undefined)}x`,
    ];
  });
  printRows(['benchmark', 'figure', 'this', 'ref', 'this / ref', 'vs baseline, this', 'vs baseline, ref'], rows);
  console.log(`\nthis: ${hereName}; ref: ${refName}. "this / ref" above 1 is a larger figure here: worse for a time, better for a rate.`);
  console.log('"vs baseline" is each side\'s own same-run ratio (its figure over the baseline it measured beside it).');
}
