import { DOMParser } from '@xmldom/xmldom';
import * as xpath from 'xpath';
import type { UiNode } from '../ui.js';
import { flatten, nodeAt, sourceXml, type Located, type SourceOptions } from './source.js';

/**
 * The server's locator strategies (ElementsLookupStrategy), run over the window's one view tree: `id`, `xpath`,
 * `accessibility id`, `class name` and `-android uiautomator`.
 */

/** What a failed lookup throws; the routes turn it into the server's W3C error. */
export class LocatorError extends Error {
  constructor(
    readonly error: 'invalid selector' | 'no such element',
    message: string,
  ) {
    super(message);
  }
}

export const STRATEGIES = ['id', 'xpath', 'accessibility id', 'class name', '-android uiautomator'] as const;

export interface Window {
  /** The window's tree as it is now: rebuilt after anything changes it, as scrolling does. */
  tree(): UiNode | undefined;
  display: Omit<SourceOptions, 'indexed'>;
  /** The package of the window in front: what a bare id is completed with. */
  packageName: string;
  /** disableIdLocatorAutocompletion */
  completeIds: boolean;
}

/** ElementLocationHelpers.resourceIdRegex: an id that already names its package. */
const FULL_RESOURCE_ID = /^[a-zA-Z_][a-zA-Z0-9._]*:[^/]+\/\S+$/;

/** All matches in document order; the first is what a single find returns. `context` limits the search to its subtree. */
export function find(window: Window, strategy: string, selector: string, context?: Located): Located[] {
  const root = window.tree();
  if (!root) return [];
  const scope = context ?? { node: root, path: [] };
  // UiDevice's searches look below the context element, not at it; the window's root is itself a candidate.
  const candidates = () => flatten(scope.node, scope.path).slice(context ? 1 : 0);
  switch (strategy) {
    case 'id': {
      const id = window.completeIds && !FULL_RESOURCE_ID.test(selector) ? `${window.packageName}:id/${selector}` : selector;
      return candidates().filter((l) => l.node.resourceId === id);
    }
    case 'accessibility id':
      return candidates().filter((l) => l.node.contentDesc === selector);
    case 'class name':
      return candidates().filter((l) => l.node.className === selector);
    case 'xpath':
      return byXpath(window, root, selector, context);
    case '-android uiautomator':
      return byUiAutomator(window, selector, context);
    default:
      throw new LocatorError(
        'invalid selector',
        `Selector strategy '${strategy}' is not supported. Only the following selector strategies are supported: [${STRATEGIES.join(', ')}]`,
      );
  }
}

// ---------------------------------------------------------------------------------------------------------
// XPath: evaluated on the page source itself, so a query sees exactly the XML the client was shown.

function byXpath(window: Window, root: UiNode, expression: string, context?: Located): Located[] {
  const scope = context ?? { node: root, path: [] };
  const xml = sourceXml(scope.node, { ...window.display, indexed: true }, context ? { index: context.path.at(-1) ?? 0 } : undefined);
  const nodes = flatten(scope.node, scope.path);
  const doc = new DOMParser().parseFromString(xml, 'text/xml');
  let result: xpath.SelectReturnType;
  try {
    result = xpath.select(expression, doc as unknown as Node);
  } catch (err) {
    throw new LocatorError('invalid selector', `Invalid XPath expression '${expression}': ${(err as Error).message}`);
  }
  if (!Array.isArray(result)) {
    throw new LocatorError('invalid selector', `The XPath expression '${expression}' does not select elements`);
  }
  return result
    .filter((n): n is Element => typeof n === 'object' && n !== null && n.nodeType === 1)
    .map((e) => nodes[Number(e.getAttribute('uiElementIndex'))])
    .filter((l): l is Located => l !== undefined);
}

// ---------------------------------------------------------------------------------------------------------
// -android uiautomator: Java expressions building UiSelector and UiScrollable objects, as UiAutomatorParser reads them.

type Arg = string | number | boolean | Selector;

interface Selector {
  tests: ((n: UiNode, indexInParent: number) => boolean)[];
  instance?: number;
  child?: Selector;
}

interface Scrollable {
  container: Selector;
  target: Selector;
}

const STRING_TESTS: Record<string, (n: UiNode, v: string) => boolean> = {
  text: (n, v) => n.text === v,
  textContains: (n, v) => n.text.includes(v),
  textStartsWith: (n, v) => n.text.startsWith(v),
  textMatches: (n, v) => fullMatch(v, n.text),
  className: (n, v) => n.className === v,
  classNameMatches: (n, v) => fullMatch(v, n.className),
  description: (n, v) => n.contentDesc === v,
  descriptionContains: (n, v) => n.contentDesc.includes(v),
  descriptionStartsWith: (n, v) => n.contentDesc.startsWith(v),
  descriptionMatches: (n, v) => fullMatch(v, n.contentDesc),
  resourceId: (n, v) => n.resourceId === v,
  resourceIdMatches: (n, v) => fullMatch(v, n.resourceId),
  packageName: (n, v) => n.packageName === v,
  packageNameMatches: (n, v) => fullMatch(v, n.packageName),
};

const BOOLEAN_TESTS: Record<string, (n: UiNode) => boolean> = {
  checkable: (n) => n.checkable,
  checked: (n) => n.checked,
  clickable: (n) => n.clickable,
  enabled: (n) => n.enabled,
  focusable: (n) => n.focusable,
  focused: (n) => n.focused,
  longClickable: (n) => n.longClickable,
  scrollable: (n) => n.scrollable,
  selected: (n) => n.selected,
};

/** Java's String.matches: the whole string. */
function fullMatch(pattern: string, value: string): boolean {
  try {
    return new RegExp(`^(?:${pattern})$`, 's').test(value);
  } catch {
    throw new LocatorError('invalid selector', `Invalid regular expression '${pattern}'`);
  }
}

class Parser {
  private pos = 0;

  constructor(private readonly text: string) {}

  fail(what: string): never {
    throw new LocatorError('invalid selector', `Could not parse UiSelector argument '${this.text}': ${what} at position ${this.pos}`);
  }

  private skipSpace(): void {
    while (/\s/.test(this.text[this.pos] ?? '')) this.pos++;
  }

  private eat(token: string): boolean {
    this.skipSpace();
    if (!this.text.startsWith(token, this.pos)) return false;
    this.pos += token.length;
    return true;
  }

  private expect(token: string): void {
    if (!this.eat(token)) this.fail(`expected '${token}'`);
  }

  private identifier(): string {
    this.skipSpace();
    const m = /^[A-Za-z_][A-Za-z0-9_]*/.exec(this.text.slice(this.pos));
    if (!m) this.fail('expected a method name');
    this.pos += m[0].length;
    return m[0];
  }

  get done(): boolean {
    this.skipSpace();
    return this.pos >= this.text.length;
  }

  /** `new UiScrollable(sel).scrollIntoView(sel)` or a UiSelector chain, with or without its `new UiSelector()`. */
  statement(): Selector | Scrollable {
    const start = this.pos;
    if (this.eat('new') && this.eat('UiScrollable')) {
      this.expect('(');
      const container = this.selector();
      this.expect(')');
      let target: Selector | undefined;
      while (this.eat('.')) {
        const method = this.identifier();
        const args = this.args();
        if (method === 'scrollIntoView' && args[0] !== undefined && typeof args[0] === 'object') target = args[0];
        else if (method === 'scrollTextIntoView' && typeof args[0] === 'string') target = { tests: [(n) => n.text === args[0]] };
        else if (!['setAsVerticalList', 'setAsHorizontalList', 'setMaxSearchSwipes', 'setSwipeDeadZonePercentage'].includes(method)) {
          this.fail(`UiScrollable has no supported method '${method}'`);
        }
      }
      if (!target) this.fail('UiScrollable needs scrollIntoView');
      return { container, target };
    }
    this.pos = start;
    return this.selector();
  }

  private selector(): Selector {
    const sel: Selector = { tests: [] };
    if (this.eat('new')) {
      this.expect('UiSelector');
      this.expect('(');
      this.expect(')');
    } else if (this.eat('UiSelector')) {
      this.expect('(');
      this.expect(')');
    }
    while (this.eat('.')) {
      const method = this.identifier();
      const args = this.args();
      const [arg] = args;
      const stringTest = STRING_TESTS[method];
      const booleanTest = BOOLEAN_TESTS[method];
      if (stringTest && typeof arg === 'string') sel.tests.push((n) => stringTest(n, arg));
      else if (booleanTest && typeof arg === 'boolean') sel.tests.push((n) => booleanTest(n) === arg);
      else if (method === 'index' && typeof arg === 'number') sel.tests.push((_n, i) => i === arg);
      else if (method === 'instance' && typeof arg === 'number') sel.instance = arg;
      else if (method === 'childSelector' && typeof arg === 'object') sel.child = arg;
      else this.fail(`UiSelector has no method '${method}' taking (${args.map((a) => typeof a).join(', ')})`);
    }
    return sel;
  }

  private args(): Arg[] {
    this.expect('(');
    const args: Arg[] = [];
    if (this.eat(')')) return args;
    do args.push(this.arg());
    while (this.eat(','));
    this.expect(')');
    return args;
  }

  private arg(): Arg {
    this.skipSpace();
    const rest = this.text.slice(this.pos);
    const str = /^"((?:[^"\\]|\\.)*)"/.exec(rest);
    if (str) {
      this.pos += str[0].length;
      return str[1]!.replace(/\\(.)/g, (_, c: string) => ({ n: '\n', t: '\t' })[c] ?? c);
    }
    const bool = /^(true|false)\b/.exec(rest);
    if (bool) {
      this.pos += bool[0].length;
      return bool[1] === 'true';
    }
    const num = /^-?\d+/.exec(rest);
    if (num) {
      this.pos += num[0].length;
      return Number(num[0]);
    }
    if (rest.startsWith('new') || rest.startsWith('UiSelector')) return this.selector();
    this.fail('expected a string, a number, a boolean or a UiSelector');
  }
}

/** Statements separated by `;`, outside string literals. */
function statements(expression: string): string[] {
  const out: string[] = [];
  let current = '';
  let quoted = false;
  for (let i = 0; i < expression.length; i++) {
    const c = expression[i]!;
    if (c === '"' && expression[i - 1] !== '\\') quoted = !quoted;
    if (c === ';' && !quoted) {
      out.push(current);
      current = '';
    } else current += c;
  }
  out.push(current);
  return out.map((s) => s.trim()).filter(Boolean);
}

function matches(sel: Selector, scope: Located, root: UiNode): Located[] {
  const found = flatten(scope.node, scope.path)
    .slice(1)
    .filter((l) => {
      const parent = nodeAt(root, l.path.slice(0, -1));
      const index = parent ? parent.children.indexOf(l.node) : 0;
      return sel.tests.every((t) => t(l.node, index));
    });
  const picked = sel.instance !== undefined ? found.slice(sel.instance, sel.instance + 1) : found;
  if (!sel.child) return picked;
  const child = sel.child;
  return picked.flatMap((l) => matches(child, l, root));
}

/** What a UiSelector matches in the window, the window's root included (UiDevice searches from above it). */
function search(root: UiNode, sel: Selector, context?: Located): Located[] {
  if (context) return matches(sel, context, root);
  // A virtual parent above the root, so that the root is a candidate as well.
  const top: UiNode = { ...root, children: [root] };
  return matches(sel, { node: top, path: [] }, top).map((l) => ({ node: l.node, path: l.path.slice(1) }));
}

function byUiAutomator(window: Window, expression: string, context?: Located): Located[] {
  if (expression.trim() === '') throw new LocatorError('invalid selector', 'Tried to parse an empty string.');
  const parsed = statements(expression).map((s) => {
    const p = new Parser(s);
    const statement = p.statement();
    if (!p.done) p.fail('unexpected text');
    return statement;
  });
  const out: Located[] = [];
  for (const statement of parsed) {
    const root = window.tree();
    if (!root) break;
    if ('container' in statement) out.push(...scrollIntoView(window, statement, context));
    else out.push(...search(root, statement, context));
  }
  return out;
}

/** UiScrollable.scrollIntoView: back to the top, then a swipe of most of the container at a time until it shows. */
function scrollIntoView(window: Window, s: Scrollable, context?: Located): Located[] {
  const MAX_SWIPES = 30;
  const container = () => {
    const root = window.tree();
    return root ? search(root, s.container, context)[0] : undefined;
  };
  const found = () => {
    const root = window.tree();
    return root ? search(root, s.target, context) : [];
  };
  if (found().length > 0) return found();
  const height = (c: Located) => c.node.bounds.bottom - c.node.bounds.top;
  for (let i = 0; i < MAX_SWIPES; i++) {
    const c = container();
    if (!c?.node.onScroll?.(0, -height(c))) break;
  }
  for (let i = 0; i < MAX_SWIPES; i++) {
    const hit = found();
    if (hit.length > 0) return hit;
    const c = container();
    if (!c?.node.onScroll?.(0, Math.round(height(c) * 0.8))) break;
  }
  return found();
}
