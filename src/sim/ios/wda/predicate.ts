import { unknownError } from './errors.js';
import { attributeGetter, type Snap } from './snapshot.js';

/**
 * The NSPredicate format language, the part of it `-ios predicate string` and class chain queries use: comparisons
 * (==, !=, <, <=, >, >=, CONTAINS, BEGINSWITH, ENDSWITH, LIKE, MATCHES, IN, BETWEEN, with [c] and [d]), AND, OR,
 * NOT, parentheses, TRUEPREDICATE and FALSEPREDICATE, over the element's wd attributes (name, label, value, type,
 * visible, enabled, rect.x ...).
 */
export type Predicate = (s: Snap) => boolean;

type Operand = { key: string; get: (s: Snap) => unknown } | { literal: unknown } | { list: Operand[] };
type Token = { kind: 'string' | 'number' | 'word' | 'op'; text: string; value?: unknown };

const OPERATORS = ['==', '!=', '<>', '<=', '=<', '>=', '=>', '&&', '||', '=', '<', '>', '!', '(', ')', '{', '}', ','];

function tokenize(format: string, fail: () => never): Token[] {
  const tokens: Token[] = [];
  let i = 0;
  while (i < format.length) {
    const ch = format[i]!;
    if (/\s/.test(ch)) {
      i++;
    } else if (ch === '"' || ch === "'") {
      let text = '';
      i++;
      while (i < format.length && format[i] !== ch) {
        if (format[i] === '\\' && i + 1 < format.length) {
          const next = format[++i]!;
          text += next === 'n' ? '\n' : next === 't' ? '\t' : next;
        } else text += format[i];
        i++;
      }
      if (i >= format.length) fail();
      i++;
      tokens.push({ kind: 'string', text, value: text });
    } else if (/[0-9]/.test(ch) || (ch === '-' && /[0-9]/.test(format[i + 1] ?? ''))) {
      const m = /^-?[0-9]+(\.[0-9]+)?/.exec(format.slice(i))!;
      tokens.push({ kind: 'number', text: m[0], value: Number(m[0]) });
      i += m[0].length;
    } else if (/[A-Za-z_]/.test(ch)) {
      const m = /^[A-Za-z_][\w.]*/.exec(format.slice(i))!;
      i += m[0].length;
      // Comparison options follow an operator keyword: CONTAINS[cd].
      const options = /^\[[cdn]+\]/i.exec(format.slice(i));
      if (options) i += options[0].length;
      tokens.push({ kind: 'word', text: m[0] + (options ? options[0].toLowerCase() : '') });
    } else {
      const op = OPERATORS.find((o) => format.startsWith(o, i));
      if (!op) fail();
      i += op.length;
      const options = /^\[[cdn]+\]/i.exec(format.slice(i));
      if (options && op !== '(' && op !== ')') i += options[0].length;
      tokens.push({ kind: 'op', text: op + (options && op !== '(' && op !== ')' ? options[0].toLowerCase() : '') });
    }
  }
  return tokens;
}

const COMPARISONS = new Set(['==', '=', '!=', '<>', '<', '<=', '=<', '>', '>=', '=>', 'CONTAINS', 'BEGINSWITH', 'ENDSWITH', 'LIKE', 'MATCHES', 'IN', 'BETWEEN']);

export function parsePredicate(format: string): Predicate {
  const fail = (): never => {
    throw unknownError(`Unable to parse the format string "${format}"`);
  };
  const tokens = tokenize(format, fail);
  let pos = 0;
  const peek = () => tokens[pos];
  const word = (t: Token | undefined) => (t?.kind === 'word' ? t.text.toUpperCase() : t?.kind === 'op' ? t.text : undefined);
  const take = () => tokens[pos++] ?? fail();

  const operand = (): Operand => {
    const t = take();
    if (t.kind === 'string' || t.kind === 'number') return { literal: t.value };
    if (t.kind === 'op' && t.text === '{') {
      const list: Operand[] = [];
      if (word(peek()) !== '}') {
        for (;;) {
          list.push(operand());
          if (word(peek()) !== ',') break;
          pos++;
        }
      }
      if (word(take()) !== '}') fail();
      return { list };
    }
    if (t.kind !== 'word') return fail();
    const upper = t.text.toUpperCase();
    if (upper === 'TRUE' || upper === 'YES') return { literal: true };
    if (upper === 'FALSE' || upper === 'NO') return { literal: false };
    if (upper === 'NIL' || upper === 'NULL') return { literal: undefined };
    if (t.text.includes('[')) fail();
    // rect.x: the attribute, then a key of the dictionary it is.
    const [head, ...rest] = t.text.split('.');
    const base = attributeGetter(head!);
    const get = (s: Snap) => rest.reduce<unknown>((v, k) => (v && typeof v === 'object' ? (v as Record<string, unknown>)[k] : undefined), base(s));
    return { key: t.text, get };
  };

  const comparison = (): Predicate => {
    const upper = word(peek());
    if (upper === 'TRUEPREDICATE') return pos++, () => true;
    if (upper === 'FALSEPREDICATE') return pos++, () => false;
    const left = operand();
    const opToken = take();
    const m = /^([^[]+)(?:\[([cdn]+)\])?$/.exec(opToken.text);
    const op = m?.[1]!.toUpperCase() ?? '';
    if (opToken.kind === 'string' || opToken.kind === 'number' || !COMPARISONS.has(op)) fail();
    const options = m?.[2] ?? '';
    const right = operand();
    return compare(left, op, right, options.includes('c'), options.includes('d'));
  };

  const unary = (): Predicate => {
    const w = word(peek());
    if (w === 'NOT' || w === '!') {
      pos++;
      const inner = unary();
      return (s) => !inner(s);
    }
    if (w === '(') {
      pos++;
      const inner = or();
      if (word(take()) !== ')') fail();
      return inner;
    }
    return comparison();
  };
  const and = (): Predicate => {
    const items = [unary()];
    while (word(peek()) === 'AND' || word(peek()) === '&&') {
      pos++;
      items.push(unary());
    }
    return items.length === 1 ? items[0]! : (s) => items.every((p) => p(s));
  };
  const or = (): Predicate => {
    const items = [and()];
    while (word(peek()) === 'OR' || word(peek()) === '||') {
      pos++;
      items.push(and());
    }
    return items.length === 1 ? items[0]! : (s) => items.some((p) => p(s));
  };

  if (!tokens.length) fail();
  const predicate = or();
  if (pos !== tokens.length) fail();
  return predicate;
}

function valueOf(operand: Operand, s: Snap): unknown {
  if ('get' in operand) return operand.get(s);
  if ('list' in operand) return operand.list.map((o) => valueOf(o, s));
  return operand.literal;
}

/** Booleans are NSNumbers in a predicate: visible == 1 and visible == YES are one comparison. */
const numeric = (v: unknown) => (typeof v === 'boolean' ? Number(v) : v);

function compare(left: Operand, op: string, right: Operand, caseless: boolean, diacritics: boolean): Predicate {
  const fold = (text: string) => {
    let t = text;
    if (diacritics) t = t.normalize('NFD').replace(/\p{M}/gu, '');
    return caseless ? t.toLowerCase() : t;
  };
  const equal = (a: unknown, b: unknown) => {
    if (typeof a === 'string' && typeof b === 'string') return fold(a) === fold(b);
    return numeric(a) === numeric(b);
  };
  const order = (a: unknown, b: unknown): number | undefined => {
    const x = numeric(a);
    const y = numeric(b);
    if (typeof x === 'number' && typeof y === 'number') return x - y;
    if (typeof x === 'string' && typeof y === 'string') return fold(x) < fold(y) ? -1 : fold(x) > fold(y) ? 1 : 0;
    return undefined;
  };
  const ordered = (a: unknown, b: unknown, test: (o: number) => boolean) => {
    const o = order(a, b);
    return o !== undefined && test(o);
  };
  const text = (a: unknown, b: unknown, test: (a: string, b: string) => boolean) =>
    typeof a === 'string' && typeof b === 'string' && test(fold(a), fold(b));
  const like = (pattern: string, flags: string) =>
    new RegExp(`^${pattern.replace(/[.+^${}()|[\]\\]/g, '\\$&').replace(/\*/g, '.*').replace(/\?/g, '.')}$`, flags);
  return (s) => {
    const a = valueOf(left, s);
    const b = valueOf(right, s);
    switch (op) {
      case '==':
      case '=':
        return equal(a, b);
      case '!=':
      case '<>':
        return !equal(a, b);
      case '<':
        return ordered(a, b, (o) => o < 0);
      case '<=':
      case '=<':
        return ordered(a, b, (o) => o <= 0);
      case '>':
        return ordered(a, b, (o) => o > 0);
      case '>=':
      case '=>':
        return ordered(a, b, (o) => o >= 0);
      case 'CONTAINS':
        return text(a, b, (x, y) => x.includes(y));
      case 'BEGINSWITH':
        return text(a, b, (x, y) => x.startsWith(y));
      case 'ENDSWITH':
        return text(a, b, (x, y) => x.endsWith(y));
      case 'LIKE':
        return typeof a === 'string' && typeof b === 'string' && like(fold(b), '').test(fold(a));
      case 'MATCHES':
        try {
          return typeof a === 'string' && typeof b === 'string' && new RegExp(`^(?:${b})$`, caseless ? 'iu' : 'u').test(diacritics ? fold(a) : a);
        } catch {
          throw unknownError(`Can't do regex matching, reason: Can't open pattern U_REGEX_RULE_SYNTAX (string ${String(a)}, pattern ${b}, case 0, canon 0)`);
        }
      case 'IN':
        if (Array.isArray(b)) return b.some((item) => equal(a, item));
        return text(b, a, (x, y) => x.includes(y));
      case 'BETWEEN':
        return Array.isArray(b) && b.length === 2 && ordered(a, b[0], (o) => o >= 0) && ordered(a, b[1], (o) => o <= 0);
    }
    return false;
  };
}
