import type { FleetDevice, UiElement, ActionResult, DeviceAction } from '../../../../shared/api/devices.js';
import type { StoredFile, App as AppView } from '../../../../shared/api/files.js';
import type { Instance } from '../../../../shared/api/sessions.js';
import type { Asset, TestResult } from '../../../../shared/api/test-results.js';
import type { Frame } from '../../services/live-screen.js';
import type { DeviceTarget } from '../../services/device-control.js';
import type { ExecOutcome } from '../../services/instances.js';
import type { Scope } from '../../services/scope.js';
import type { DeviceAllocationRow } from '../../store/devices.js';
import type { DeviceFilter } from '../../domain/device-filters.js';
import { notFound } from '../../domain/errors.js';
import type { EngineContext } from '../../services/context.js';
import type { DeviceControl } from '../../services/device-control.js';
import type { DeviceAllocator } from '../../services/devices.js';
import { createSession } from '../../services/sessions.js';
import { getTestResult, listAssets, listTestResults } from '../../services/test-results.js';
import { presentFleetDevice } from '../presenters/fleet.js';
import { presentInstance } from '../presenters/sessions.js';
import { presentAsset, presentTestResult } from '../presenters/test-results.js';
import { presentApp } from '../routes/apps.js';
import { presentFile } from '../routes/files.js';

/** One line of a phone's log, as GET .../logs streams it. */
export interface LogLine {
  time: string;
  level: string;
  tag: string;
  pid: number;
  message: string;
}

/**
 * What the MCP tools call: the lab's services, addressed by scope, in the same terms as the REST routes. Built once
 * in server.ts from the engine's services; the tools never see a store.
 */
export interface McpLab {
  /** The device-control core: every device tool goes through it with target {serial}. */
  control: {
    screenshot(scope: Scope, target: DeviceTarget): Promise<Frame>;
    elements(scope: Scope, target: DeviceTarget): Promise<UiElement[]>;
    act(scope: Scope, target: DeviceTarget, action: DeviceAction, signal?: AbortSignal): Promise<ActionResult>;
    install(scope: Scope, target: DeviceTarget, body: { file: string; launch?: boolean }): Promise<{ bundleId: string }>;
    /** A phone's log lines as they come; absent until the Android driver streams logcat. */
    logs?(scope: Scope, target: DeviceTarget, signal: AbortSignal): AsyncIterable<LogLine>;
  };
  devices: {
    allocate(scope: Scope, sessionId: string, request: { filters: DeviceFilter[] }): DeviceAllocationRow;
    find(scope: Scope, sessionId: string, deviceId: string): DeviceAllocationRow;
    release(scope: Scope, sessionId: string, deviceId: string): DeviceAllocationRow;
    /** The organization's allocations that are not released. */
    held(scope: Scope): DeviceAllocationRow[];
    /** Every phone of the lab, free or held; who holds it only for the caller's organization. */
    fleet(scope: Scope): FleetDevice[];
  };
  /** A new session of the caller's organization: each MCP session keeps its allocations in one. */
  createSession(scope: Scope): string;
  instances: {
    create(scope: Scope, sessionId: string): Instance;
    /** An instance of the organization by id, wherever its session. */
    get(scope: Scope, instanceId: string): Instance;
    exec(scope: Scope, instanceId: string, body: { command: string; timeoutSeconds?: number }): Promise<ExecOutcome>;
    release(scope: Scope, instanceId: string): Instance;
  };
  testResults: {
    list(scope: Scope, query: { limit: number; status?: string; sessionId?: string }): TestResult[];
    get(scope: Scope, id: string): { testResult: TestResult; assets: Asset[] };
  };
  files: {
    list(scope: Scope, limit: number): StoredFile[];
    apps(scope: Scope, query: { limit: number; platform?: string }): AppView[];
  };
}

/**
 * The lab as the MCP tools see it, over the engine's services. (The services not yet converted off EngineContext
 * are reached through it; the device tools go through DeviceControl and DeviceAllocator only.)
 */
export function createMcpLab(ctx: EngineContext, services: { allocator: DeviceAllocator; control: DeviceControl }): McpLab {
  const { allocator, control } = services;
  /** An instance of the organization by id: its session is found from the instance, as /mcp names no session. */
  const instanceOf = (scope: Scope, instanceId: string) => {
    const row = ctx.stores.instances.get(instanceId);
    if (!row || row.organizationId !== scope.organization.id) throw notFound('instance');
    return row;
  };
  return {
    control,
    devices: {
      allocate: (scope, sessionId, request) => allocator.allocate(scope, sessionId, request),
      find: (scope, sessionId, deviceId) => allocator.find(scope, sessionId, deviceId),
      release: (scope, sessionId, deviceId) => allocator.release(scope, sessionId, deviceId),
      held: (scope) => allocator.held(scope),
      fleet: (scope) => ctx.stores.fleet.all().map((d) => presentFleetDevice(d, allocator.holder(d.serial, scope.organization.id))),
    },
    createSession: (scope) => createSession(ctx, scope).id,
    instances: {
      create: (scope, sessionId) => presentInstance(ctx.instances.create(scope, sessionId, { os: 'macos' })),
      get: (scope, id) => presentInstance(ctx.instances.get(scope, instanceOf(scope, id).sessionId, id)),
      exec: (scope, id, body) => ctx.instances.exec(scope, instanceOf(scope, id).sessionId, id, body),
      release: (scope, id) => presentInstance(ctx.instances.release(scope, instanceOf(scope, id).sessionId, id)),
    },
    testResults: {
      list: (scope, query) => listTestResults(ctx, scope, query).testResults.map(presentTestResult),
      get: (scope, id) => ({ testResult: presentTestResult(getTestResult(ctx, scope, id)), assets: listAssets(ctx, scope, id).map(presentAsset) }),
    },
    files: {
      list: (scope, limit) => ctx.files.list(scope, { limit }).files.map(presentFile),
      apps: (scope, query) => ctx.files.listApps(scope, query).apps.map(presentApp),
    },
  };
}
