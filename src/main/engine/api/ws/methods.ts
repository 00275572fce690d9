import type { DeviceAction } from '../../../../shared/api/devices.js';
import type { DeviceControl, DeviceTarget } from '../../services/device-control.js';
import type { DeviceAllocator } from '../../services/devices.js';
import type { Scope } from '../../services/scope.js';
import { RPC_ERRORS, RpcError, unsupported, type RpcMethod } from './jsonrpc.js';
import {
  allocation, deviceInfo, fleetModels, foregroundApp, installedApps, listedDevice, OK, PARAMS, screenElement, screenshot, toAction,
  type Params,
} from './shapes.js';

/** One call's context: the socket's caller, and the socket's life. */
export interface RpcCall {
  /** The organization the call acts on, resolved for each call, so that a membership change applies at once. */
  scope(): Scope;
  /** Aborts when the socket closes: a long press in flight lets go. */
  signal: AbortSignal;
}

export interface WsServices {
  allocator: DeviceAllocator;
  control: DeviceControl;
  /** A new session of the caller's organization, for an allocation made over /ws. */
  createSession(scope: Scope): { id: string };
  /** How long device.reboot waits for the phone to come back. */
  rebootTimeoutMs: number;
}

type Method = RpcMethod<RpcCall>;

/**
 * The fleet's JSON-RPC methods. Handlers are thin: the shapes module maps params and results, DeviceAllocator
 * allocates, and DeviceControl drives the phone and decides who may (the caller's organization holds it in_use).
 */
export function wsMethods(services: WsServices): Record<string, Method> {
  const { allocator, control } = services;
  const target = (p: { deviceId: string }): DeviceTarget => ({ serial: p.deviceId });
  const act = (call: RpcCall, p: { deviceId: string }, action: DeviceAction) => control.act(call.scope(), target(p), action, call.signal);
  /**
   * A method that is one device action and answers {"status":"ok"}. P is always its default, the params' Static type
   * (see tool() in mcp/tools.ts: typebox's Static of a bare type parameter costs the typecheck seconds).
   */
  const acting = <K extends keyof typeof PARAMS, P = Params<K>>(params: K, toDomain: (p: NoInfer<P>) => DeviceAction): Method => ({
    params: PARAMS[params],
    handle: async (p: P & { deviceId: string }, call) => {
      await act(call, p, toDomain(p));
      return OK;
    },
  });
  const refused = (message: string): Method => ({ params: PARAMS.none, handle: () => Promise.reject(unsupported(message)) });

  return {
    // ---- the fleet ----
    'fleet.listDevices': { params: PARAMS.none, handle: () => fleetModels(allocator.inventory()) },
    'fleet.allocate': {
      params: PARAMS.allocate,
      handle: (p: Params<'allocate'>, call) => {
        const scope = call.scope();
        // Every allocation lives in a session, so that REST and the GUI see it.
        const session = services.createSession(scope);
        return allocation(allocator.allocate(scope, session.id, { filters: p.filters }));
      },
    },
    'fleet.release': {
      params: PARAMS.device,
      handle: (p: Params<'device'>, call) => {
        const scope = call.scope();
        const row = allocator.held(scope).find((r) => r.serial === p.deviceId || r.id === p.deviceId);
        if (!row) throw new RpcError(RPC_ERRORS.deviceNotAllocated, `Device not allocated: ${p.deviceId} is not allocated to you.`);
        allocator.release(scope, row.sessionId, p.deviceId);
        return OK;
      },
    },
    'devices.list': {
      params: PARAMS.devicesList,
      handle: (p: Params<'devicesList'>, call) => ({ devices: listed(allocator, call.scope(), p) }),
    },
    // mobilewright's listDevices reads result.data.devices.
    'device.list': {
      params: PARAMS.devicesList,
      handle: (p: Params<'devicesList'>, call) => ({ status: 'ok', data: { devices: listed(allocator, call.scope(), p) } }),
    },

    // ---- reading the phone ----
    'device.info': {
      params: PARAMS.device,
      handle: async (p: Params<'device'>, call) => {
        const scope = call.scope();
        const row = control.holding(scope, target(p));
        const size = await control.act(scope, target(p), { type: 'screenSize' }, call.signal);
        return deviceInfo(row, { width: size.width ?? 0, height: size.height ?? 0 });
      },
    },
    'device.screenshot': {
      params: PARAMS.screenshot,
      handle: async (p: Params<'screenshot'>, call) => screenshot(await control.screenshot(call.scope(), target(p))),
    },
    'device.dump.ui': {
      params: PARAMS.dumpUi,
      handle: async (p: Params<'dumpUi'>, call) => {
        if (p.format === 'raw') throw unsupported('The raw UI hierarchy is not available from Benchtop; omit format to get the elements.');
        return { elements: (await control.elements(call.scope(), target(p))).map(screenElement) };
      },
    },
    'device.io.orientation.get': {
      params: PARAMS.device,
      handle: async (p: Params<'device'>, call) => ({ orientation: (await act(call, p, { type: 'getOrientation' })).orientation }),
    },
    'device.apps.list': {
      params: PARAMS.device,
      handle: async (p: Params<'device'>, call) => installedApps((await act(call, p, { type: 'listApps' })).apps ?? []),
    },
    'device.apps.foreground': {
      params: PARAMS.device,
      handle: async (p: Params<'device'>, call) => foregroundApp((await act(call, p, { type: 'foregroundApp' })).packageName ?? ''),
    },
    'device.crashes.list': {
      params: PARAMS.device,
      // Benchtop collects no crash reports yet: an allocated phone has none to show.
      handle: (p: Params<'device'>, call) => (control.holding(call.scope(), target(p)), []),
    },
    'device.crashes.get': {
      params: PARAMS.crash,
      handle: (p: Params<'crash'>, call) => {
        control.holding(call.scope(), target(p));
        throw unsupported(`No crash report ${p.id} on ${p.deviceId}: Benchtop collects no crash reports.`);
      },
    },

    // ---- driving the phone ----
    'device.io.tap': acting('tap', toAction.tap),
    'device.io.longpress': acting('longPress', toAction.longPress),
    'device.io.swipe': acting('swipe', toAction.swipe),
    'device.io.gesture': acting('gesture', toAction.gesture),
    'device.io.text': acting('text', toAction.text),
    'device.io.button': acting('button', toAction.button),
    'device.io.orientation.set': acting('orientation', toAction.orientation),
    'device.url': acting('url', toAction.url),
    'device.apps.launch': acting('launch', toAction.launch),
    'device.apps.terminate': acting('app', toAction.terminate),
    'device.apps.uninstall': acting('app', toAction.uninstall),
    'device.io.keys': {
      params: PARAMS.keys,
      handle: async (p: Params<'keys'>, call) => {
        // All mapped first, so that a key Benchtop cannot press refuses the call before any key is pressed.
        for (const action of toAction.keys(p)) await act(call, p, action);
        return OK;
      },
    },
    'device.reboot': {
      params: PARAMS.device,
      handle: async (p: Params<'device'>, call) => {
        await control.reboot(call.scope(), target(p), { timeoutMs: services.rebootTimeoutMs });
        return OK;
      },
    },

    // ---- what Benchtop cannot do: a clear error rather than "method not found" ----
    'device.screenrecord': refused('Screen recording is not supported by Benchtop.'),
    'device.screenrecord.stop': refused('Screen recording is not supported by Benchtop.'),
    'device.location.set': refused('Setting the location is not supported: an Android phone needs a mock-location app for it, and Benchtop installs none.'),
    'device.location.clear': refused('Setting the location is not supported: an Android phone needs a mock-location app for it, and Benchtop installs none.'),
    'device.boot': refused('A real phone cannot be booted remotely; it is on while it is in the lab. device.reboot restarts it.'),
    'device.shutdown': refused('Shutting a lab phone down is not allowed; device.reboot restarts it.'),
    'uploads.create': refused('Uploads over /ws are not supported: upload the app with POST /api/v1/files, then install it with POST /api/v1/sessions/{sessionId}/devices/{serial}/install.'),
    'device.apps.install': refused('Installing over /ws is not supported: upload the app with POST /api/v1/files, then install it with POST /api/v1/sessions/{sessionId}/devices/{serial}/install.'),
  };
}

function listed(allocator: DeviceAllocator, scope: Scope, p: Params<'devicesList'>) {
  return allocator
    .held(scope)
    .map(listedDevice)
    .filter((d) => (!p.platform || d.platform === p.platform) && (!p.type || d.type === p.type));
}
