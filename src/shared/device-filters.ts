import { modelName } from './phone-models.js';

/**
 * How allocation filters match a phone: the engine's rule (domain/device-filters.ts validates, then allocates with it)
 * and the page's (it counts the matching phones before anyone allocates). One rule, so the count never disagrees.
 */

/** One element of an allocation request: ANDed with the others. */
export interface DeviceFilter {
  attribute: string;
  operator: string;
  value: string;
}

/**
 * The operators each attribute accepts: the engine refuses any other (domain/device-filters.ts), and the page's filter
 * builder offers these. serial and deviceName are the lab's own beside the spec's: one phone exactly, and WebDriver's
 * appium:deviceName (the Fleet's name or the model, as a cloud's catalog writes it).
 */
export const FILTER_OPERATORS: Readonly<Record<string, readonly string[]>> = {
  platform: ['EQUALS'],
  type: ['EQUALS'],
  serial: ['EQUALS'],
  name: ['EQUALS', 'STARTS_WITH', 'CONTAINS'],
  version: ['EQUALS', 'GREATER_THAN', 'GREATER_THAN_OR_EQUALS', 'LESS_THAN', 'LESS_THAN_OR_EQUALS'],
  deviceName: ['EQUALS'],
};

/** What a filter can see of a phone. */
export interface MatchableDevice {
  platform: string;
  type: string;
  name: string;
  osVersion: string;
  /** What adb or usbmuxd calls it (WebDriver's appium:udid); a filter on it names exactly one phone. */
  serial?: string;
  /** The model the phone reports (Android's ro.product.model, an iPhone's ProductType such as "iPhone15,4"). */
  model?: string | null;
}

/**
 * The makers a cloud lab's catalog puts before a model ("Google Pixel 7", "Apple iPhone 15"): the phone itself reports
 * the model without it.
 */
const MAKERS = ['apple', 'google', 'samsung', 'oneplus', 'xiaomi', 'motorola', 'huawei', 'oppo', 'vivo', 'sony', 'nokia', 'realme', 'asus', 'lg', 'zte', 'honor', 'nothing'];

/** `.*` stands for any text (Sauce Labs' dynamic allocation writes "iPhone.*"); everything else is literal. */
function wildcardMatch(pattern: string, text: string): boolean {
  const parts = pattern.split('.*');
  if (parts.length === 1) return pattern === text;
  // Linear in the text whatever the pattern: each literal part is found after the one before it, the first at the
  // start and the last at the end (no backtracking of a regular expression a caller wrote).
  const first = parts[0]!;
  const last = parts[parts.length - 1]!;
  if (!text.startsWith(first) || text.length < first.length + last.length || !text.endsWith(last)) return false;
  let at = first.length;
  const end = text.length - last.length;
  for (const part of parts.slice(1, -1)) {
    const found = text.indexOf(part, at);
    if (found < 0 || found + part.length > end) return false;
    at = found + part.length;
  }
  return true;
}

/**
 * WebDriver's appium:deviceName as suites write it: the phone's name in the Fleet, or its model as a cloud lab's
 * catalog names it ("Pixel 7", "Google Pixel 7", "iPhone 15" for an iPhone15,4), without regard to case, with `.*`
 * for any text ("iPhone.*").
 */
export function matchesDeviceName(device: MatchableDevice, asked: string): boolean {
  const wanted = asked.trim().toLowerCase();
  const space = wanted.indexOf(' ');
  const withoutMaker = space > 0 && MAKERS.includes(wanted.slice(0, space)) ? wanted.slice(space + 1) : undefined;
  // A catalog may leave out the "5G" of a name that has it ("Galaxy A54" for the Galaxy A54 5G).
  const names = [device.name, ...(device.model ? [device.model, modelName(device.model)] : [])]
    .map((n) => n.toLowerCase())
    .flatMap((n) => (n.endsWith(' 5g') ? [n, n.slice(0, -3)] : [n]));
  return names.some((name) => wildcardMatch(wanted, name) || (withoutMaker !== undefined && wildcardMatch(withoutMaker, name)));
}

/**
 * Compares dotted versions numerically, part by part, missing parts being 0: "18" equals "18.0.0" and "9" is
 * below "10". A device version with non-numeric parts ("14-beta") uses each part's leading digits.
 */
export function compareVersions(a: string, b: string): number {
  const pa = a.split('.').map((p) => parseInt(p, 10) || 0);
  const pb = b.split('.').map((p) => parseInt(p, 10) || 0);
  for (let i = 0; i < Math.max(pa.length, pb.length); i++) {
    const d = (pa[i] ?? 0) - (pb[i] ?? 0);
    if (d !== 0) return Math.sign(d);
  }
  return 0;
}

function matchesOne(device: MatchableDevice, f: DeviceFilter): boolean {
  switch (f.attribute) {
    case 'platform':
      return device.platform === f.value;
    case 'type':
      return device.type === f.value;
    case 'serial':
      return device.serial === f.value;
    case 'deviceName':
      return matchesDeviceName(device, f.value);
    case 'name': {
      // Names are matched without regard to case: "pixel" finds a "Pixel 8".
      const name = device.name.toLowerCase();
      const value = f.value.toLowerCase();
      if (f.operator === 'EQUALS') return name === value;
      if (f.operator === 'STARTS_WITH') return name.startsWith(value);
      return name.includes(value);
    }
    case 'version': {
      const c = compareVersions(device.osVersion, f.value);
      switch (f.operator) {
        case 'EQUALS':
          return c === 0;
        case 'GREATER_THAN':
          return c > 0;
        case 'GREATER_THAN_OR_EQUALS':
          return c >= 0;
        case 'LESS_THAN':
          return c < 0;
        default:
          return c <= 0;
      }
    }
    default:
      return false;
  }
}

export function matches(device: MatchableDevice, filters: readonly DeviceFilter[]): boolean {
  return filters.every((f) => matchesOne(device, f));
}
