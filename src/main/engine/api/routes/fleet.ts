import { List } from '../../../../shared/api/common.js';
import { FleetDevice } from '../../../../shared/api/devices.js';
import type { EngineContext } from '../../services/context.js';
import { BEARER, OrganizationHeader, responses, scopeOf, type App } from '../http.js';
import { list, presentFleetDevice } from '../present.js';

/** The lab's inventory, to every signed-in caller; who holds a phone shows only for the caller's organization. */
export function fleetRoutes(app: App, ctx: EngineContext): void {
  app.get('/fleet/devices', {
    schema: { tags: ['Extensions'], operationId: 'listFleetDevices', summary: 'Every phone of the lab: state, battery, and whether it is free', security: BEARER, headers: OrganizationHeader, response: responses({ 200: List(FleetDevice) }, [401, 403]) },
  }, (req) => {
    const scope = scopeOf(ctx, req);
    return list(ctx.stores.fleet.all().map((d) => presentFleetDevice(d, ctx.devices.holder(d.serial, scope.organization.id))));
  });
}
