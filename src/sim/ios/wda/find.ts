import { DOMParser } from '@xmldom/xmldom';
import xpath from 'xpath';
import { findByClassChain } from './class-chain.js';
import { invalidArgument, invalidSelector } from './errors.js';
import { parsePredicate, type Predicate } from './predicate.js';
import { attributesInXPath, descendants, toXml, wd, type Snap } from './snapshot.js';

/** The element itself first when it matches, then its descendants in document order (XCUIElement+FBFind). */
function matching(root: Snap, predicate: Predicate, firstOnly: boolean): Snap[] {
  const found = descendants(root).filter(predicate);
  return firstOnly ? found.slice(0, 1) : found;
}

/**
 * FBXPath: the subtree written as XML with each element's index path (and only the attributes the query names),
 * evaluated by an XPath 1.0 engine from the root element, matches mapped back through their index paths.
 */
function findByXPath(root: Snap, query: string, firstOnly: boolean): Snap[] {
  // XPath matches element names only, so XCUIElementTypeAny is any element.
  const expression = query.replaceAll('XCUIElementTypeAny', '*');
  const doc = new DOMParser().parseFromString(toXml(root, { only: attributesInXPath(expression) }), 'text/xml');
  let result: unknown;
  try {
    result = xpath.select(expression, doc.documentElement as unknown as Node);
  } catch {
    throw invalidSelector(`Cannot evaluate results for XPath expression "${expression}"`);
  }
  // A number, string or boolean result is no node set: nothing matches.
  if (!Array.isArray(result)) return [];
  const byPath = new Map(descendants(root).map((s) => [s.path, s]));
  const found: Snap[] = [];
  for (const node of result as Element[]) {
    const path = node.nodeType === 1 ? node.getAttribute('private_indexPath') : null;
    const snap = path ? byPath.get(path) : undefined;
    if (snap) found.push(snap);
  }
  return firstOnly ? found.slice(0, 1) : found;
}

/** FBFindElementCommands' strategies, as the XCUITest driver sends them (it strips the -ios prefixes). */
export function findElements(root: Snap, using: string, value: string, firstOnly: boolean): Snap[] {
  switch (using) {
    case 'name':
    case 'id':
    case 'accessibility id':
      return matching(root, (s) => wd.name(s) === value, firstOnly);
    case 'class name': {
      if (!value.startsWith('XCUIElementType')) throw invalidArgument(`Invalid argument for class used '${value}'. Did you mean XCUIElementType${value}?`);
      return matching(root, (s) => value === 'XCUIElementTypeAny' || s.node.type === value, firstOnly);
    }
    case 'predicate string':
      return matching(root, parsePredicate(value), firstOnly);
    case 'class chain':
      return findByClassChain(root, value, firstOnly);
    case 'xpath':
      return findByXPath(root, value, firstOnly);
    case 'link text':
    case 'partial link text': {
      const [property, text] = value.includes('=') ? [value.slice(0, value.indexOf('=')), value.slice(value.lastIndexOf('=') + 1)] : ['name', value];
      const partial = using.startsWith('partial');
      const escaped = text.replace(/\\/g, '\\\\').replace(/'/g, "\\'");
      return matching(root, parsePredicate(`${property} ${partial ? 'CONTAINS' : '=='} '${escaped}'`), false);
    }
  }
  throw invalidArgument(`Invalid locator requested: ${using}`);
}
