import type { Stores } from '../store/index.js';
import type { DeviceAllocator } from './devices.js';

/** The tray's line: the lab at a glance, with the window closed. */
export interface LabSummary {
  phones: { free: number; inUse: number };
  instances: { running: number };
}

/** Phones online (free, or held by any organization, cleanup included) and instances provisioning or ready. */
export function labSummary(stores: Pick<Stores, 'fleet' | 'instances'>, allocator: Pick<DeviceAllocator, 'holder'>): LabSummary {
  const online = stores.fleet.all().filter((phone) => phone.state === 'device');
  const inUse = online.filter((phone) => allocator.holder(phone.serial, '').held).length;
  return {
    phones: { free: online.length - inUse, inUse },
    instances: { running: stores.instances.activeTotal() },
  };
}

const plural = (n: number, one: string, many: string) => `${n} ${n === 1 ? one : many}`;

export function describeLabSummary(summary: LabSummary): string {
  return `${plural(summary.phones.free, 'phone', 'phones')} free, ${summary.phones.inUse} in use; ` +
    `${plural(summary.instances.running, 'instance', 'instances')} running`;
}
