import type { LogLine } from '../../../../shared/api/devices.js';
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
import { presentApp, presentFile } from '../presenters/files.js';
import { presentFleetDevice } from '../presenters/fleet.js';
import { presentInstance } from '../presenters/sessions.js';
import { presentAsset, presentTestResult } from '../presenters/test-results.js';
import type { DeviceControl } from '../../services/device-control.js';
import type { DeviceAllocator } from '../../services/devices.js';
import type { FileManager } from '../../services/files.js';
import type { InstanceManager } from '../../services/instances.js';
import type { Sessions } from '../../services/sessions.js';
import type { TestResults } from '../../services/test-results.js';

/** The engine's services the MCP tools use (a subset of server.ts's ApiServices). */
export interface McpServices {
  allocator: DeviceAllocator;
  control: DeviceControl;
  sessions: Sessions;
  instances: InstanceManager;
  testResults: TestResults;
  files: FileManager;
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
    /** A phone's log lines as they come, from the start of the allocation. */
    logs(scope: Scope, target: DeviceTarget): { lines(signal: AbortSignal): AsyncIterable<LogLine> };
    /** Restarts the phone and answers once it is back in_use, as REST's .../reboot does. */
    restart(scope: Scope, target: DeviceTarget): Promise<void>;
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

/** The lab as the MCP tools see it, over the engine's services: the same calls, and presenters, as the REST routes. */
export function createMcpLab(services: McpServices, options: { rebootTimeoutMs: number }): McpLab {
  const { allocator, control, sessions, instances, testResults, files } = services;
  return {
    control: {
      screenshot: (scope, target) => control.screenshot(scope, target),
      elements: (scope, target) => control.elements(scope, target),
      act: (scope, target, action, signal) => control.act(scope, target, action, signal),
      install: (scope, target, body) => control.install(scope, target, body),
      logs: (scope, target) => control.logs(scope, target),
      restart: (scope, target) => control.reboot(scope, target, { timeoutMs: options.rebootTimeoutMs }),
    },
    devices: {
      allocate: (scope, sessionId, request) => allocator.allocate(scope, sessionId, request),
      find: (scope, sessionId, deviceId) => allocator.find(scope, sessionId, deviceId),
      release: (scope, sessionId, deviceId) => allocator.release(scope, sessionId, deviceId),
      held: (scope) => allocator.held(scope),
      fleet: (scope) => allocator.inventory().map((d) => presentFleetDevice(d, allocator.holder(d.serial, scope.organization.id))),
    },
    createSession: (scope) => sessions.createSession(scope).id,
    instances: {
      create: (scope, sessionId) => presentInstance(instances.create(scope, sessionId, { os: 'macos' })),
      get: (scope, id) => presentInstance(instances.find(scope, id)),
      exec: (scope, id, body) => instances.exec(scope, instances.find(scope, id).sessionId, id, body),
      release: (scope, id) => presentInstance(instances.release(scope, instances.find(scope, id).sessionId, id)),
    },
    testResults: {
      list: (scope, query) => testResults.listTestResults(scope, query).testResults.map(presentTestResult),
      get: (scope, id) => ({ testResult: presentTestResult(testResults.getTestResult(scope, id)), assets: testResults.listAssets(scope, id).map(presentAsset) }),
    },
    files: {
      list: (scope, limit) => files.list(scope, { limit }).files.map(presentFile),
      apps: (scope, query) => files.listApps(scope, query).apps.map(presentApp),
    },
  };
}
