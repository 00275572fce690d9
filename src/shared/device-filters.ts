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

/** What a filter can see of a phone. */
export interface MatchableDevice {
  platform: string;
  type: string;
  name: string;
  osVersion: string;
  /** What adb or usbmuxd calls it (WebDriver's appium:udid); a filter on it names exactly one phone. */
  serial?: string;
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
