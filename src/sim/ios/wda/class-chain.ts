import { invalidSelector } from './errors.js';
import { parsePredicate, type Predicate } from './predicate.js';
import { descendants, type Snap } from './snapshot.js';

/** One step of a class chain: `**\/` (any depth) or a child, a type, `[\`predicate\`]`, `[$predicate$]`, `[n]`. */
interface ChainItem {
  descendant: boolean;
  /** undefined for `*` and XCUIElementTypeAny. */
  type: string | undefined;
  self: Predicate[];
  containing: Predicate[];
  /** 1-based; negative counts from the end. */
  position: number | undefined;
}

/** FBClassChainQueryParser's grammar, with its error messages. */
export function parseClassChain(query: string): ChainItem[] {
  const error = (detail: string) => invalidSelector(`Cannot parse class chain query '${query}'. ${detail}`);
  const unexpected = (i: number) =>
    invalidSelector(`Cannot parse class chain query '${query}'. Unexpected character detected at position ${i + 1}:\n${query.slice(0, i + 1)} <----`);
  const items: ChainItem[] = [];
  let i = 0;
  while (i <= query.length) {
    let descendant = false;
    if (query.startsWith('**/', i)) {
      descendant = true;
      i += 3;
      if (query.startsWith('**/', i)) throw error("Unexpected token '**'. Descendant markers cannot be duplicated.");
    }
    const name = /^(\*|[A-Za-z]\w*)/.exec(query.slice(i));
    if (!name) {
      if (descendant) throw error("Descendants lookup modifier '**/' should be followed with the actual element type");
      throw unexpected(Math.min(i, query.length - 1));
    }
    const typeName = name[1]!;
    if (typeName !== '*' && !typeName.startsWith('XCUIElementType')) throw error(`'${typeName}' class name is unknown to WDA`);
    i += typeName.length;
    const item: ChainItem = { descendant, type: typeName === '*' || typeName === 'XCUIElementTypeAny' ? undefined : typeName, self: [], containing: [], position: undefined };
    while (query[i] === '[') {
      if (query[i + 1] === '`' || query[i + 1] === '$') {
        const marker = query[i + 1]!;
        const end = query.indexOf(`${marker}]`, i + 2);
        if (end < 0) throw error(`Cannot find the end of '${query.slice(i + 1)}' predicate value.`);
        if (item.position !== undefined) throw error(`Predicate value '${query.slice(i + 2, end)}' must be set before position value.`);
        const predicate = parsePredicate(query.slice(i + 2, end));
        (marker === '`' ? item.self : item.containing).push(predicate);
        i = end + 2;
      } else {
        const end = query.indexOf(']', i);
        if (end < 0) throw unexpected(query.length - 1);
        const text = query.slice(i + 1, end);
        if (item.position !== undefined) throw error(`Position value '${text}' is expected to be set only once.`);
        if (!/^-?\d+$/.test(text.trim()) || Number(text) === 0) throw error(`Position value '${text}' is expected to be a valid integer number not equal to zero.`);
        item.position = Number(text);
        i = end + 1;
      }
    }
    items.push(item);
    if (i === query.length) break;
    if (query[i] !== '/') throw unexpected(i);
    i++;
    if (i === query.length) throw unexpected(i - 1);
  }
  return items;
}

function matching(item: ChainItem, roots: Snap[]): Snap[] {
  const seen = new Set<Snap>();
  let matches: Snap[] = [];
  for (const root of roots) {
    for (const s of item.descendant ? descendants(root, false) : root.children) {
      if ((item.type === undefined || s.node.type === item.type) && !seen.has(s)) {
        seen.add(s);
        matches.push(s);
      }
    }
  }
  for (const p of item.self) matches = matches.filter(p);
  for (const p of item.containing) matches = matches.filter((m) => descendants(m, false).some(p));
  return matches;
}

function pick(item: ChainItem, candidates: Snap[], firstOnly: boolean): Snap[] {
  const p = item.position;
  if (p === undefined) return firstOnly ? candidates.slice(0, 1) : candidates;
  const found = p > 0 ? candidates[p - 1] : candidates[candidates.length + p];
  return found ? [found] : [];
}

/** XCUIElement+FBClassChain's walk: each step from the previous step's matches; a position narrows to one root. */
export function findByClassChain(root: Snap, query: string, firstOnly: boolean): Snap[] {
  const items = parseClassChain(query);
  let candidates = matching(items[0]!, [root]);
  for (let i = 1; i < items.length; i++) {
    const roots = items[i - 1]!.position !== undefined ? pick(items[i - 1]!, candidates, true) : candidates;
    if (!roots.length) return [];
    candidates = matching(items[i]!, roots);
  }
  return pick(items.at(-1)!, candidates, firstOnly);
}
