import { createStore } from 'zustand/vanilla';
import type { FleetDevice } from '../../shared/api/devices.js';
import type { FleetHost } from '../../shared/api/mac-hosts.js';
import type { FleetProvider } from '../../shared/api/providers.js';
import type { ApiClient } from '../../shared/client/api-client.js';

/** A phone that appeared or disappeared between two polls: what the Fleet screen lists as plug and unplug. */
export interface FleetChange {
  serial: string;
  name: string;
  change: 'plugged' | 'unplugged';
  at: number;
}

export interface FleetState {
  devices: FleetDevice[];
  hosts: FleetHost[];
  /** The lab's providers and their health: the Fleet screen draws them with its phones, from the same poll. */
  providers: FleetProvider[];
  changes: FleetChange[];
  loaded: boolean;
  error: string | undefined;
  refresh(): Promise<void>;
  /** Polls every intervalMs until the returned function is called. */
  poll(intervalMs: number): () => void;
}

const MAX_CHANGES = 20;

/**
 * The new list, with each item that did not change since the last poll kept as the same object: a screen that
 * memoizes its rows then renders only the rows that changed, not a hundred on every poll.
 */
function keepUnchanged<T>(before: T[], after: T[], key: (item: T) => string): T[] {
  const old = new Map(before.map((item) => [key(item), { item, json: JSON.stringify(item) }]));
  const kept = after.map((item) => {
    const was = old.get(key(item));
    return was && was.json === JSON.stringify(item) ? was.item : item;
  });
  return kept.length === before.length && kept.every((item, i) => item === before[i]) ? before : kept;
}
/** A phone counts as attached when adb sees it in any state but gone. */
const attached = (d: FleetDevice) => d.state !== 'gone';

export function createFleetStore(api: () => ApiClient, now: () => number = Date.now) {
  let inFlight: Promise<void> | undefined;
  /** When the last answer came: a poll that starts just after one (the page's early request) waits its turn. */
  let answeredAt = -Infinity;
  return createStore<FleetState>()((set, get) => {
    const load = async () => {
      try {
        const [devices, hosts, providers] = await Promise.all([api().fleetDevices(), api().fleetHosts(), api().fleetProviders()]);
        const { loaded, devices: before } = get();
        const changes: FleetChange[] = [];
        if (loaded) {
          const was = new Map(before.map((d) => [d.serial, attached(d)]));
          for (const d of devices.data) {
            const isAttached = attached(d);
            if ((was.get(d.serial) ?? false) !== isAttached) {
              changes.push({ serial: d.serial, name: d.name, change: isAttached ? 'plugged' : 'unplugged', at: now() });
            }
          }
        }
        // A phone is listed before its inventory (model name) is read: earlier changes learn the name later.
        const names = new Map(devices.data.map((d) => [d.serial, d.name]));
        const earlier = get().changes.map((c) => (c.name ? c : { ...c, name: names.get(c.serial) ?? '' }));
        set({
          devices: keepUnchanged(before, devices.data, (d) => d.serial),
          hosts: keepUnchanged(get().hosts, hosts.data, (h) => h.id),
          providers: keepUnchanged(get().providers, providers.data, (p) => p.name),
          changes: [...changes, ...earlier].slice(0, MAX_CHANGES),
          loaded: true,
          error: undefined,
        });
        answeredAt = now();
      } catch (error) {
        set({ error: (error as Error).message });
      }
    };
    return {
      devices: [],
      hosts: [],
      providers: [],
      changes: [],
      loaded: false,
      error: undefined,
      refresh() {
        // A refresh asked for while one runs shares it: the page's early request and the screen's first poll are one.
        inFlight ??= load().finally(() => (inFlight = undefined));
        return inFlight;
      },
      poll(intervalMs) {
        let stopped = false;
        let timer: ReturnType<typeof setTimeout> | undefined;
        // One request at a time: a slow answer delays the next poll instead of piling requests up.
        const tick = async () => {
          await get().refresh();
          if (!stopped) timer = setTimeout(tick, intervalMs);
        };
        // A list that is fresher than the interval is not asked for again at once (the page asked for it before the
        // app ran, or another screen's poll just did): the first tick comes when it would have after that answer.
        const fresh = intervalMs - (now() - answeredAt);
        if (fresh > 0) timer = setTimeout(tick, fresh);
        else void tick();
        return () => {
          stopped = true;
          clearTimeout(timer);
        };
      },
    };
  });
}
