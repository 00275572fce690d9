/**
 * The shell blocks of the docs, as docs/README.md describes them: a ```sh block is marked by the HTML comment on the
 * line before it, `<!-- run: NAME -->` (run by test/docs/commands.test.ts, which checks it by NAME),
 * `<!-- not run: WHY -->` (shown only), or `<!-- env -->` (variables the reader sets and the test supplies).
 */
import { readFileSync } from 'node:fs';

export type BlockMark = { kind: 'run'; name: string } | { kind: 'not run'; why: string } | { kind: 'env' } | { kind: 'unmarked' };

export interface ShellBlock {
  /** The page, relative to the repository, and the line of the opening fence. */
  where: string;
  mark: BlockMark;
  code: string;
}

const FENCE = /^(\s*)```(\S*)\s*$/;

function markOf(line: string | undefined): BlockMark {
  const m = /^<!--\s*(run|not run|env)\s*(?::\s*(.*?))?\s*-->$/.exec((line ?? '').trim());
  if (!m) return { kind: 'unmarked' };
  if (m[1] === 'env') return { kind: 'env' };
  if (m[1] === 'run') return { kind: 'run', name: m[2] ?? '' };
  return { kind: 'not run', why: m[2] ?? '' };
}

/** Every ```sh (or ```bash, ```shell) block of a Markdown file, in order, with its mark. */
export function shellBlocks(file: string, label: string): ShellBlock[] {
  const lines = readFileSync(file, 'utf8').split('\n');
  const blocks: ShellBlock[] = [];
  for (let i = 0; i < lines.length; i++) {
    const open = FENCE.exec(lines[i]!);
    if (!open) continue;
    const end = lines.findIndex((line, j) => j > i && line.trim() === '```');
    if (end < 0) throw new Error(`${label}:${i + 1}: a code fence that is never closed`);
    if (['sh', 'bash', 'shell'].includes(open[2]!)) {
      let before = i - 1;
      while (before >= 0 && lines[before]!.trim() === '') before--;
      blocks.push({ where: `${label}:${i + 1}`, mark: markOf(lines[before]), code: lines.slice(i + 1, end).join('\n') });
    }
    i = end;
  }
  return blocks;
}

/** The shell variables a block assigns (`NAME=...` or `export NAME=...` at the start of a line). */
export function assignedVariables(code: string): string[] {
  const names = [...code.matchAll(/^\s*(?:export\s+)?([A-Za-z_][A-Za-z0-9_]*)=/gm)].map((m) => m[1]!);
  return [...new Set(names)];
}
