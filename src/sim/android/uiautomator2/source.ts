import type { UiNode } from '../ui.js';

/**
 * The UiAutomator2 server's page source: AccessibilityNodeInfoDumper's XML, which differs from `uiautomator dump`'s.
 * A `hierarchy` root carrying the display's rotation and size, one element per view named after its Java class, and
 * the attributes in UiElementSnapshot.SUPPORTED_ATTRIBUTES' order, those without a value left out.
 */

/** A view of the window and where it sits: the child indexes from the window's root down to it. */
export interface Located {
  node: UiNode;
  path: number[];
}

/** Every view of the tree in document order, the order the dumper writes them and UiDevice searches them. */
export function flatten(root: UiNode, rootPath: number[] = []): Located[] {
  const out: Located[] = [];
  const visit = (node: UiNode, path: number[]) => {
    out.push({ node, path });
    node.children.forEach((child, i) => visit(child, [...path, i]));
  };
  visit(root, rootPath);
  return out;
}

export function nodeAt(root: UiNode, path: number[]): UiNode | undefined {
  let node: UiNode | undefined = root;
  for (const i of path) node = node?.children[i];
  return node;
}

/** Rect.toShortString(), as the `bounds` attribute shows it. */
export function boundsString(n: UiNode): string {
  const b = n.bounds;
  return `[${b.left},${b.top}][${b.right},${b.bottom}]`;
}

const EDITABLE = new Set(['android.widget.EditText', 'android.widget.AutoCompleteTextView']);

/** InputType flags: TYPE_CLASS_TEXT with multi-line for a note, TYPE_TEXT_VARIATION_URI for an address bar. */
function inputType(n: UiNode): number | undefined {
  if (!EDITABLE.has(n.className)) return undefined;
  return n.resourceId.endsWith(':id/url_bar') ? 0x11 : 0x20001;
}

/** The attributes of one view, in the dumper's order; undefined values are not written. */
export function attributes(n: UiNode, index: number): [string, string | number | boolean | undefined][] {
  return [
    ['index', index],
    ['package', n.packageName],
    ['class', n.className],
    ['text', n.text],
    ['content-desc', n.contentDesc || undefined],
    ['resource-id', n.resourceId || undefined],
    ['checkable', n.checkable],
    ['checked', n.checked],
    ['clickable', n.clickable],
    ['enabled', n.enabled],
    ['focusable', n.focusable],
    ['focused', n.focused],
    ['long-clickable', n.longClickable],
    ['password', n.password],
    ['scrollable', n.scrollable],
    ['selected', n.selected],
    ['bounds', boundsString(n)],
    // Everything in the window's tree is on screen: views scrolled away are not laid out at all.
    ['displayed', true],
    ['hint', n.hint],
    ['a11y-important', true],
    ['screen-reader-focusable', false],
    ['input-type', inputType(n)],
    ['drawing-order', index + 1],
    ['showing-hint', n.showingHint ?? false],
    ['text-entry-key', false],
    ['dismissable', false],
    ['a11y-focused', false],
    ['heading', false],
    ['live-region', 0],
    ['context-clickable', false],
    ['content-invalid', false],
    ['is-collection', n.className === 'androidx.recyclerview.widget.RecyclerView' || undefined],
  ];
}

/** KXmlSerializer's attribute escaping; characters XML cannot hold become '?', as the dumper's toSafeString does. */
function escapeAttr(value: string): string {
  return value
    // eslint-disable-next-line no-control-regex
    .replace(/[\u0000-\u0008\u000b\u000c\u000e-\u001f\ufffe\uffff]/g, '?')
    .replace(/[&<>"\n\r\t]/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', '\n': '&#10;', '\r': '&#13;', '\t': '&#9;' })[c]!);
}

/** AccessibilityNodeInfoDumper.toXmlNodeName: a class name made a valid tag. */
function tagName(className: string): string {
  const fixed = className.replace(/[$@#&]/g, '.').replace(/\.+/g, '.').replace(/(^\.|\.$)/g, '');
  return fixed || 'android.view.View';
}

export interface SourceOptions {
  rotation: number;
  width: number;
  height: number;
  /**
   * Adds `uiElementIndex`, each view's place in flatten()'s order, as the dumper does for an XPath search so that
   * the matched XML elements lead back to their views. Page source never has it.
   */
  indexed?: boolean;
}

/**
 * The page source of the window (`hierarchy` root), or of one view's subtree when `subtree` is set: the document an
 * XPath search within an element runs on (limitXPathContextScope, the server's default).
 */
export function sourceXml(root: UiNode | undefined, options: SourceOptions, subtree?: { index: number }): string {
  const out = ["<?xml version='1.0' encoding='UTF-8' standalone='yes' ?>\n"];
  let counter = 0;
  const visit = (n: UiNode, index: number, depth: number) => {
    const tag = tagName(n.className);
    const pad = '  '.repeat(depth);
    const attrs = attributes(n, index)
      .filter(([, v]) => v !== undefined)
      .map(([k, v]) => ` ${k}="${escapeAttr(String(v))}"`)
      .join('');
    const own = counter++;
    out.push(`${pad}<${tag}${attrs}${options.indexed ? ` uiElementIndex="${own}"` : ''}`);
    if (n.children.length === 0) {
      out.push(' />\n');
      return;
    }
    out.push('>\n');
    n.children.forEach((c, i) => visit(c, i, depth + 1));
    out.push(`${pad}</${tag}>\n`);
  };
  if (subtree) {
    if (root) visit(root, subtree.index, 0);
  } else {
    const display = `rotation="${options.rotation}" width="${options.width}" height="${options.height}"`;
    if (!root) {
      out.push(`<hierarchy index="0" class="hierarchy" ${display} />\n`);
    } else {
      out.push(`<hierarchy index="0" class="hierarchy" ${display}>\n`);
      visit(root, 0, 1);
      out.push('</hierarchy>\n');
    }
  }
  return out.join('').trimEnd();
}
