import { List } from '../../../../shared/api/common.js';
import { FleetDevice } from '../../../../shared/api/devices.js';
import { FleetHost } from '../../../../shared/api/mac-hosts.js';
import type { EngineContext } from '../../services/context.js';
import { INSTANCE_ARCH } from '../../services/instances.js';
import type { MacHosts } from '../../services/mac-hosts.js';
import { BEARER, OrganizationHeader, responses, scopeOf, type App } from '../http.js';
import { list } from '../presenters/common.js';
import { presentFleetDevice, presentFleetHost } from '../presenters/fleet.js';

/** The lab's inventory, to every signed-in caller; who holds a phone or an instance shows only for the caller's organization. */
export function fleetRoutes(app: App, ctx: EngineContext, macHosts: MacHosts): void {
  app.get('/fleet/devices', {
    schema: { tags: ['Extensions'], operationId: 'listFleetDevices', summary: 'Every phone of the lab: state, battery, and whether it is free', security: BEARER, headers: OrganizationHeader, response: responses({ 200: List(FleetDevice) }, [401, 403]) },
  }, (req) => {
    const scope = scopeOf(req);
    return list(ctx.stores.fleet.all().map((d) => presentFleetDevice(d, ctx.devices.holder(d.serial, scope.organization.id))));
  });

  app.get('/fleet/hosts', {
    schema: { tags: ['Extensions'], operationId: 'listFleetHosts', summary: 'Every Mac host of the lab: health and free slots', security: BEARER, headers: OrganizationHeader, response: responses({ 200: List(FleetHost) }, [401, 403]) },
  }, (req) => list(macHosts.fleet(scopeOf(req)).map((h) => presentFleetHost(h.host, h.health, h.freeSlots, h.own, INSTANCE_ARCH))));
}
