import { List } from '../../../../shared/api/common.js';
import { FleetDevice, FleetDeviceNotePatch, FleetDeviceParams } from '../../../../shared/api/devices.js';
import { FleetHost } from '../../../../shared/api/mac-hosts.js';
import type { DeviceAllocator } from '../../services/devices.js';
import type { LabOwner } from '../../services/lab-owner.js';
import { INSTANCE_ARCH } from '../../services/instances.js';
import type { MacHosts } from '../../services/mac-hosts.js';
import type { Providers } from '../../services/providers.js';
import type { Reservations } from '../../services/reservations.js';
import type { WebDriverRuns } from '../../services/webdriver.js';
import { FleetProvider } from '../../../../shared/api/providers.js';
import { presentFleetProvider } from '../presenters/providers.js';
import { BEARER, callerOf, OrganizationHeader, responses, scopeOf, type App } from '../http.js';
import { list } from '../presenters/common.js';
import { presentFleetDevice, presentFleetHost } from '../presenters/fleet.js';

/**
 * How far ahead the Fleet screen shows a phone's booking: longer than the holder's warning (minutes), so that whoever
 * takes a phone for a test run learns it is booked before they start, not when it is taken back.
 */
const BOOKED_AHEAD_MS = 3600_000;

/** The lab's inventory, to every signed-in caller; who holds a phone or an instance shows only for the caller's organization. */
export function fleetRoutes(app: App, allocator: DeviceAllocator, macHosts: MacHosts, providers: Providers, reservations: Reservations, webdriver: Pick<WebDriverRuns, 'heldBy'>, labOwner: LabOwner): void {
  /** The phones as the caller's organization sees them: its own holders and bookings, nobody else's. */
  const presented = (scope: ReturnType<typeof scopeOf>, devices: ReturnType<DeviceAllocator['inventory']>) => {
    const booked = reservations.bookedSoon(scope, BOOKED_AHEAD_MS);
    return devices.map((d) => {
      const holder = allocator.holder(d.serial, scope.organization.id);
      return presentFleetDevice(d, holder, booked.get(d.serial), holder.allocationId !== undefined && webdriver.heldBy(holder.allocationId) !== undefined);
    });
  };

  app.get('/fleet/devices', {
    schema: { tags: ['Extensions'], operationId: 'listFleetDevices', summary: 'Every phone of the lab: state, battery, and whether it is free', security: BEARER, headers: OrganizationHeader, response: responses({ 200: List(FleetDevice) }, [401, 403]) },
  }, (req) => list(presented(scopeOf(req), allocator.inventory())));

  app.patch('/fleet/devices/:serial', {
    schema: { tags: ['Extensions'], operationId: 'updateFleetDevice', summary: 'The lab owner\'s note on a phone, what tells identical phones apart (null removes it)', security: BEARER, headers: OrganizationHeader, params: FleetDeviceParams, body: FleetDeviceNotePatch, response: responses({ 200: FleetDevice }, [400, 401, 403, 404]) },
  }, (req) => {
    labOwner.require(callerOf(req));
    const scope = scopeOf(req);
    return presented(scope, [allocator.setNote(req.params.serial, req.body.note)])[0]!;
  });

  app.get('/fleet/hosts', {
    schema: { tags: ['Extensions'], operationId: 'listFleetHosts', summary: 'Every Mac host of the lab: health and free slots', security: BEARER, headers: OrganizationHeader, response: responses({ 200: List(FleetHost) }, [401, 403]) },
  }, (req) => list(macHosts.fleet(scopeOf(req)).map((h) => presentFleetHost(h.host, h.health, h.freeSlots, h.own, INSTANCE_ARCH))));

  app.get('/fleet/providers', {
    schema: { tags: ['Extensions'], operationId: 'listFleetProviders', summary: 'Every provider of the lab: health and phones', security: BEARER, headers: OrganizationHeader, response: responses({ 200: List(FleetProvider) }, [401, 403]) },
  }, (req) => {
    scopeOf(req);
    return list(providers.onFleet().map(presentFleetProvider));
  });
}
