import { createHash } from 'node:crypto';
import type { AxNode } from '../springboard.js';
import { unknownError } from './errors.js';

/**
 * One element of the screen as WDA sees it in a snapshot: the accessibility node with its parent, its index among
 * its siblings and its index path from the lookup root ("top", "top,0", "top,0,2"), which is how FBXPath maps an
 * XPath match back to an element.
 */
export interface Snap {
  node: AxNode;
  parent: Snap | undefined;
  index: number;
  path: string;
  children: Snap[];
}

export function snapshot(root: AxNode): Snap {
  const make = (node: AxNode, parent: Snap | undefined, index: number, path: string): Snap => {
    const snap: Snap = { node, parent, index, path, children: [] };
    snap.children = node.children.map((child, i) => make(child, snap, i, `${path},${i}`));
    return snap;
  };
  return make(root, undefined, 0, 'top');
}

/** The element and all below it, in document order (the order XCTest's queries and XPath return matches in). */
export function descendants(snap: Snap, includeSelf = true): Snap[] {
  const out: Snap[] = [];
  const walk = (s: Snap) => {
    out.push(s);
    s.children.forEach(walk);
  };
  if (includeSelf) walk(snap);
  else snap.children.forEach(walk);
  return out;
}

/** Elements whose text is their value (FBDoesElementSupportInnerText): value falls back to the placeholder. */
const INNER_TEXT = new Set(['XCUIElementTypeTextField', 'XCUIElementTypeSecureTextField', 'XCUIElementTypeTextView', 'XCUIElementTypeSearchField']);
/** Types UIKit makes accessibility elements (isAccessibilityElement YES); containers are not. */
const ACCESSIBILITY_ELEMENTS = new Set([
  'XCUIElementTypeButton', 'XCUIElementTypeStaticText', 'XCUIElementTypeCell', 'XCUIElementTypeIcon', 'XCUIElementTypeSwitch', 'XCUIElementTypeImage',
  'XCUIElementTypeLink', 'XCUIElementTypeKey', ...INNER_TEXT,
]);
/** UIAccessibilityTraits as FBAccessibilityTraitsToStringsArray names them. */
const TRAITS: Record<string, string> = {
  XCUIElementTypeButton: 'Button',
  XCUIElementTypeIcon: 'Button',
  XCUIElementTypeCell: 'Button',
  XCUIElementTypeSwitch: 'Button, ToggleButton',
  XCUIElementTypeStaticText: 'StaticText',
  XCUIElementTypeLink: 'Link',
  XCUIElementTypeImage: 'Image',
  XCUIElementTypeKey: 'KeyboardKey',
};

const nonEmpty = (s: string | undefined) => (s ? s : undefined);

/** FBXCElementSnapshotWrapper's wd* attributes: what page source, predicates, attribute/:name and text answer. */
export const wd = {
  type: (s: Snap) => s.node.type,
  value(s: Snap): string | undefined {
    const n = s.node;
    if (n.type === 'XCUIElementTypeStaticText') return nonEmpty(n.value) ?? nonEmpty(n.label);
    if (n.type === 'XCUIElementTypeButton') return nonEmpty(n.value) ?? (n.selected ? '1' : undefined);
    if (n.type === 'XCUIElementTypeSwitch') return n.value === '1' || n.value?.toLowerCase() === 'true' ? '1' : '0';
    if (INNER_TEXT.has(n.type)) return nonEmpty(n.value) ?? nonEmpty(n.placeholder);
    return nonEmpty(n.value);
  },
  /** The accessibility identifier, else the label. */
  name: (s: Snap) => nonEmpty(s.node.name) ?? nonEmpty(s.node.label),
  label: (s: Snap) => (s.node.type === 'XCUIElementTypeTextField' || s.node.type === 'XCUIElementTypeSecureTextField' ? s.node.label ?? '' : nonEmpty(s.node.label)),
  enabled: (s: Snap) => s.node.enabled ?? true,
  selected: (s: Snap) => s.node.selected ?? false,
  focused: (s: Snap) => s.node.focused ?? false,
  visible(s: Snap): boolean {
    const n = s.node;
    let root = s;
    while (root.parent) root = root.parent;
    const screen = root.node;
    return n.width > 0 && n.height > 0 && n.x < screen.x + screen.width && n.y < screen.y + screen.height && n.x + n.width > screen.x && n.y + n.height > screen.y;
  },
  nativeAccessibilityElement: (s: Snap) => ACCESSIBILITY_ELEMENTS.has(s.node.type),
  /** An accessibility element none of whose ancestors (tables aside) is one. */
  accessible(s: Snap): boolean {
    if (s.node.type !== 'XCUIElementTypeTextField' && s.node.type !== 'XCUIElementTypeSecureTextField' && !ACCESSIBILITY_ELEMENTS.has(s.node.type)) return false;
    for (let p = s.parent; p; p = p.parent) if (p.node.type !== 'XCUIElementTypeTable' && ACCESSIBILITY_ELEMENTS.has(p.node.type)) return false;
    return true;
  },
  accessibilityContainer: (s: Snap): boolean => s.children.some((c) => ACCESSIBILITY_ELEMENTS.has(c.node.type) || wd.accessibilityContainer(c)),
  hittable: (s: Snap) => wd.visible(s) && wd.enabled(s),
  index: (s: Snap) => s.index,
  rect: (s: Snap) => ({ x: Math.round(s.node.x), y: Math.round(s.node.y), width: Math.round(s.node.width), height: Math.round(s.node.height) }),
  placeholderValue: (s: Snap) => (INNER_TEXT.has(s.node.type) ? s.node.placeholder : nonEmpty(s.node.placeholder)),
  traits: (s: Snap) => TRAITS[s.node.type] ?? '',
  /** XCTest's element UID: the same element keeps it across lookups, a new one (another screen) gets another. */
  uid(s: Snap): string {
    const h = createHash('sha1').update(`${s.path}|${s.node.type}|${s.node.name ?? ''}|${s.node.label ?? ''}`).digest('hex').toUpperCase();
    return `${h.slice(0, 8)}-0000-0000-${h.slice(8, 12)}-000000000000`;
  },
};

/**
 * FBElementUtils' attribute names: each wd property by its own name (wdVisible) and by its alias (visible), as
 * predicates and GET attribute/:name accept them.
 */
const ATTRIBUTES: Record<string, (s: Snap) => unknown> = {
  frame: wd.rect,
  nativeFrame: wd.rect,
  rect: wd.rect,
  name: wd.name,
  label: wd.label,
  selected: wd.selected,
  type: wd.type,
  traits: wd.traits,
  value: wd.value,
  UID: wd.uid,
  enabled: wd.enabled,
  visible: wd.visible,
  accessible: wd.accessible,
  nativeAccessibilityElement: wd.nativeAccessibilityElement,
  accessibilityContainer: wd.accessibilityContainer,
  focused: wd.focused,
  hittable: wd.hittable,
  index: wd.index,
  placeholderValue: wd.placeholderValue,
  minValue: () => undefined,
  maxValue: () => undefined,
  customActions: () => undefined,
};
for (const [alias, get] of Object.entries({ ...ATTRIBUTES })) ATTRIBUTES[`wd${alias[0]!.toUpperCase()}${alias.slice(1)}`] = get;

/** The getter of a wd attribute, by either of its names; an unknown name is FBUnknownAttributeException. */
export function attributeGetter(name: string): (s: Snap) => unknown {
  const get = Object.hasOwn(ATTRIBUTES, name) ? ATTRIBUTES[name] : undefined;
  if (!get) throw unknownError(`The attribute '${name}' is unknown. Valid attribute names are: (${Object.keys(ATTRIBUTES).sort().join(', ')})`);
  return get;
}

/** FBXPath's attributes, in the order it writes them. */
const XML_ATTRIBUTES: Array<[string, (s: Snap) => string | undefined]> = [
  ['type', wd.type],
  ['value', wd.value],
  ['name', wd.name],
  ['label', wd.label],
  ['enabled', (s) => String(wd.enabled(s))],
  ['visible', (s) => String(wd.visible(s))],
  ['accessible', (s) => String(wd.accessible(s))],
  ['nativeAccessibilityElement', (s) => String(wd.nativeAccessibilityElement(s))],
  ['x', (s) => String(wd.rect(s).x)],
  ['y', (s) => String(wd.rect(s).y)],
  ['width', (s) => String(wd.rect(s).width)],
  ['height', (s) => String(wd.rect(s).height)],
  ['index', (s) => String(s.index)],
  ['hittable', (s) => String(wd.hittable(s))],
  ['placeholderValue', (s) => (INNER_TEXT.has(s.node.type) ? wd.placeholderValue(s) : undefined)],
  ['traits', wd.traits],
];
/** Left out of the page source unless a setting asks for them (includeHittableInPageSource and the like). */
const SOURCE_EXCLUDED = new Set(['hittable', 'nativeAccessibilityElement']);

/** libxml2's escaping of an attribute value; characters XML cannot carry are dropped, as fb_xmlSafeString does. */
const escape = (s: string) =>
  s
    // eslint-disable-next-line no-control-regex
    .replace(/[\u0000-\u0008\u000B\u000C\u000E-\u001F\uFFFE\uFFFF]/g, '')
    .replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;')
    .replace(/\n/g, '&#10;').replace(/\r/g, '&#13;').replace(/\t/g, '&#9;');

export interface XmlOptions {
  /** The page source's wrapping element (Appium asks for scope=AppiumAUT). */
  scope?: string;
  /** Attribute names left out (excluded_attributes), compared case-insensitively. */
  excluded?: string[];
  /** For an XPath lookup: only these attributes, plus each element's private_indexPath. */
  only?: Set<string>;
  /** The application element's processId and bundleId, which the page source alone carries. */
  app?: { pid: number; bundleId: string };
}

/** The snapshot as FBXPath writes it with libxml2 (xmlDocDumpFormatMemory: two-space indent, empty elements closed). */
export function toXml(root: Snap, options: XmlOptions = {}): string {
  const excluded = new Set((options.excluded ?? []).map((a) => a.trim().toLowerCase()));
  const included = XML_ATTRIBUTES.filter(([name]) =>
    options.only ? options.only.has(name) : !SOURCE_EXCLUDED.has(name) && !excluded.has(name.toLowerCase()),
  );
  const out = ['<?xml version="1.0" encoding="UTF-8"?>'];
  const walk = (s: Snap, depth: number) => {
    const attrs: string[] = [];
    for (const [name, get] of included) {
      const value = get(s);
      if (value !== undefined) attrs.push(`${name}="${escape(value)}"`);
    }
    if (options.only) attrs.push(`private_indexPath="${s.path}"`);
    else if (s.node.type === 'XCUIElementTypeApplication' && options.app) attrs.push(`processId="${options.app.pid}"`, `bundleId="${escape(options.app.bundleId)}"`);
    const pad = '  '.repeat(depth);
    const open = `${pad}<${s.node.type}${attrs.length ? ' ' + attrs.join(' ') : ''}`;
    if (!s.children.length) return void out.push(`${open}/>`);
    out.push(`${open}>`);
    for (const child of s.children) walk(child, depth + 1);
    out.push(`${pad}</${s.node.type}>`);
  };
  if (options.scope) {
    out.push(`<${options.scope}>`);
    walk(root, 1);
    out.push(`</${options.scope}>`);
  } else walk(root, 0);
  return out.join('\n') + '\n';
}

/** The attributes an XPath query names (FBXPath includes only those in the document it evaluates; `@*` means all). */
export function attributesInXPath(query: string): Set<string> {
  const all = XML_ATTRIBUTES.map(([name]) => name);
  if (/[^\w@]@\*[^\w]/.test(query)) return new Set(all);
  return new Set(all.filter((name) => new RegExp(`[^\\w@]@${name}[^\\w]`).test(query)));
}

/** GET /source?format=json: XCUIApplication+FBHelpers' dictionaryForElement, recursively. */
export function jsonTree(s: Snap, excluded: Set<string>): Record<string, unknown> {
  const r = wd.rect(s);
  const frame = `{{${r.x}, ${r.y}}, {${r.width}, ${r.height}}}`;
  const flag = (v: boolean) => (v ? '1' : '0');
  const info: Record<string, unknown> = {
    type: s.node.type.replace(/^XCUIElementType/, ''),
    rawIdentifier: s.node.name || null,
    name: wd.name(s) ?? null,
    value: wd.value(s) ?? null,
    label: wd.label(s) ?? null,
    rect: r,
    customActions: null,
  };
  const blocks: Record<string, () => unknown> = {
    frame: () => frame,
    nativeFrame: () => frame,
    isEnabled: () => flag(wd.enabled(s)),
    isVisible: () => flag(wd.visible(s)),
    isAccessible: () => flag(wd.accessible(s)),
    isNativeAccessibilityElement: () => flag(wd.nativeAccessibilityElement(s)),
    isFocused: () => flag(wd.focused(s)),
    traits: () => wd.traits(s),
  };
  if (INNER_TEXT.has(s.node.type)) blocks.placeholderValue = () => wd.placeholderValue(s) ?? null;
  for (const [key, get] of Object.entries(blocks)) {
    const plain = key.startsWith('is') ? key[2]!.toLowerCase() + key.slice(3) : key;
    if (!excluded.has(plain)) info[key] = get();
  }
  if (s.children.length) info.children = s.children.map((c) => jsonTree(c, excluded));
  return info;
}
