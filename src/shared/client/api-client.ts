/**
 * The typed client of /api/v1, shared by the renderer, its stores and their tests. Response types come from the
 * TypeBox schemas the engine validates with, so a change of shape breaks the build here, not at run time.
 */
import type { Static } from 'typebox';
import type { ApiKey, AuthToken, LabSettings, LabSettingsPatch, User } from '../api/account.js';
import type { AssistantConfig, AssistantConfigBody, Chat, Message } from '../api/chats.js';
import type { ErrorBody, Health } from '../api/common.js';
import type { DeviceAction, FileApp, PhoneApp, PhoneFile, Recording } from '../api/devices.js';
import type { ActionResult, AllocateDeviceBody, DeviceInfo, FleetDevice } from '../api/devices.js';
import type { App, CreatedFile, InstallResult, StoredFile } from '../api/files.js';
import type { CreateMacHostBody, FleetHost, MacHost, UpdateMacHostBody } from '../api/mac-hosts.js';
import type { CreateProviderBody, FleetProvider, Provider, ProviderHostKey, ProviderHostKeyBody, UpdateProviderBody } from '../api/providers.js';
import type { Balance, Invitation, Member, Organization, SentInvitation } from '../api/organizations.js';
import type { AdbKey, RemoteConnect } from '../api/remote-connect.js';
import type { Device, Instance, Session } from '../api/sessions.js';
import type { Asset, TestResult, TestResultStatus } from '../api/test-results.js';
import type { CalendarSlot, LabUsage, Reservation, ReservationBody, Usage } from '../api/sharing.js';
import type { WebDriverRun } from '../api/webdriver.js';

export const API_PREFIX = '/api/v1';
/** The subprotocol the server echoes, so that the one carrying the bearer is never repeated back. */
export const SOCKET_PROTOCOL = 'benchtop';

export interface List<T> {
  object: 'list';
  data: T[];
  nextCursor?: string;
}

/** An error answered by the API, carrying its body's code and message; or a network failure (status 0). */
export class ApiError extends Error {
  constructor(readonly status: number, readonly code: string, message: string) {
    super(message);
    this.name = 'ApiError';
  }
}

export interface ApiClientOptions {
  /** The engine's origin, e.g. http://127.0.0.1:7676; '' for the page's own origin. */
  origin: string;
  token(): string | undefined;
  /** The organization to act on (X-Organization-Id); undefined for the caller's default. */
  organization(): string | undefined;
  /** Told when a request answers 401, so that the app can sign out. */
  onUnauthorized?(): void;
  /** The fetch to send requests with: the page's, unless given (the GUI's takes answers it asked for early). */
  fetch?: typeof fetch;
}

type Query = Record<string, string | number | boolean | undefined>;

interface RequestOptions {
  body?: unknown;
  query?: Query;
  /** false: no X-Organization-Id (account-level calls). */
  org?: boolean;
  signal?: AbortSignal;
  /** The media type asked for (Accept), when an operation answers more than JSON. */
  accept?: string;
  /** A raw body, sent as application/octet-stream. */
  bytes?: Blob;
}

const queryString = (query: Query = {}) => {
  const params = new URLSearchParams();
  for (const [k, v] of Object.entries(query)) if (v !== undefined && v !== '') params.set(k, String(v));
  const s = params.toString();
  return s ? `?${s}` : '';
};

const seg = encodeURIComponent;

export type ApiClient = ReturnType<typeof createApiClient>;

export function createApiClient(options: ApiClientOptions) {
  const headers = (org = true, json = false): Record<string, string> => {
    const h: Record<string, string> = {};
    const token = options.token();
    if (token) h.authorization = `Bearer ${token}`;
    const organization = org ? options.organization() : undefined;
    if (organization) h['x-organization-id'] = organization;
    if (json) h['content-type'] = 'application/json';
    return h;
  };

  /** Any /api/v1 call answering a Response; a non-2xx answer throws the API's own message. */
  async function raw(method: string, path: string, o: RequestOptions = {}): Promise<Response> {
    let response: Response;
    try {
      response = await (options.fetch ?? fetch)(`${options.origin}${API_PREFIX}${path}${queryString(o.query)}`, {
        method,
        headers: { ...headers(o.org !== false, o.body !== undefined), ...(o.accept ? { accept: o.accept } : {}), ...(o.bytes ? { 'content-type': 'application/octet-stream' } : {}) },
        body: o.bytes ?? (o.body === undefined ? undefined : JSON.stringify(o.body)),
        signal: o.signal,
      });
    } catch (error) {
      if ((error as Error).name === 'AbortError') throw error;
      throw new ApiError(0, 'network_error', `Benchtop did not answer: ${(error as Error).message}`);
    }
    if (response.ok) return response;
    let body: Partial<ErrorBody> | undefined;
    try {
      body = (await response.json()) as ErrorBody;
    } catch {
      body = undefined;
    }
    if (response.status === 401) options.onUnauthorized?.();
    throw new ApiError(response.status, body?.error?.code ?? 'http_error', body?.error?.message ?? `HTTP ${response.status} ${response.statusText}`);
  }

  async function json<T>(method: string, path: string, o: RequestOptions = {}): Promise<T> {
    const response = await raw(method, path, o);
    return (response.status === 204 ? undefined : await response.json()) as T;
  }

  /**
   * A WebSocket under /api/v1. Browsers cannot set headers on one: the bearer goes as a bearer.<token> subprotocol
   * (kept out of URLs and their logs), next to a plain one for the server to pick, and the organization in the query.
   */
  const socket = (path: string, query: Query = {}): { url: string; protocols: string[] } => {
    const base = options.origin || (typeof location === 'undefined' ? '' : location.origin);
    const token = options.token();
    return {
      url: `${base.replace(/^http/, 'ws')}${API_PREFIX}${path}${queryString({ ...query, org: options.organization() })}`,
      protocols: token ? [SOCKET_PROTOCOL, `bearer.${token}`] : [],
    };
  };

  /** A URL the API gave (an image of a tool call), for an <img>, which cannot send headers: the bearer goes as ?token=. */
  const browserUrl = (url: string): string => `${options.origin}${url}${queryString({ token: options.token(), org: options.organization() })}`;

  return {
    raw,
    browserUrl,
    health: () => json<Static<typeof Health>>('GET', '/health', { org: false }),
    login: (email: string, password: string) => json<AuthToken>('POST', '/auth/login', { body: { email, password }, org: false }),
    /** `invitation`: the secret of an invitation's link, which signs its email up even while sign-up is invitation-only. */
    signup: (email: string, password: string, name?: string, invitation?: string) =>
      json<AuthToken>('POST', '/auth/signup', { body: { email, password, name, invitation }, org: false }),
    invitationBySecret: (secret: string) => json<Invitation>('GET', `/auth/invitations/${seg(secret)}`, { org: false }),
    me: () => json<User>('GET', '/me', { org: false }),

    organizations: () => json<List<Organization>>('GET', '/organizations', { org: false }),
    createOrganization: (name: string) => json<Organization>('POST', '/organizations', { body: { name }, org: false }),
    members: (orgId: string) => json<List<Member>>('GET', `/organizations/${seg(orgId)}/members`),
    changeRole: (orgId: string, userId: string, role: Member['role']) =>
      json<unknown>('PATCH', `/organizations/${seg(orgId)}/members/${seg(userId)}`, { body: { role } }),
    removeMember: (orgId: string, userId: string) => json<void>('DELETE', `/organizations/${seg(orgId)}/members/${seg(userId)}`),
    organizationInvitations: (orgId: string) => json<List<SentInvitation>>('GET', `/organizations/${seg(orgId)}/invitations`),
    invite: (orgId: string, email: string, role: Member['role']) =>
      json<SentInvitation>('POST', `/organizations/${seg(orgId)}/invitations`, { body: { email, role } }),
    revokeInvitation: (orgId: string, invitationId: string) =>
      json<void>('DELETE', `/organizations/${seg(orgId)}/invitations/${seg(invitationId)}`),
    myInvitations: () => json<List<Invitation>>('GET', '/invitations', { org: false }),
    acceptInvitation: (id: string) => json<void>('POST', `/invitations/${seg(id)}/accept`, { org: false }),
    rejectInvitation: (id: string) => json<void>('POST', `/invitations/${seg(id)}/reject`, { org: false }),

    keys: () => json<List<ApiKey>>('GET', '/keys'),
    createKey: (name: string) => json<ApiKey & { apiKey: string }>('POST', '/keys', { body: { name } }),
    deleteKey: (id: string) => json<void>('DELETE', `/keys/${seg(id)}`),

    fleetDevices: () => json<List<FleetDevice>>('GET', '/fleet/devices'),
    fleetHosts: () => json<List<FleetHost>>('GET', '/fleet/hosts'),
    fleetProviders: () => json<List<FleetProvider>>('GET', '/fleet/providers'),

    sessions: (query: { limit?: number; before?: string } = {}) => json<List<Session>>('GET', '/sessions', { query }),
    createSession: () => json<Session>('POST', '/sessions'),
    session: (sid: string) => json<Session>('GET', `/sessions/${seg(sid)}`),
    renameSession: (sid: string, name: string | null) => json<Session>('PATCH', `/sessions/${seg(sid)}`, { body: { name } }),
    endSession: (sid: string) => json<Session>('POST', `/sessions/${seg(sid)}/end`),
    webDriverRuns: (sid: string) => json<List<WebDriverRun>>('GET', `/sessions/${seg(sid)}/webdriver-runs`),
    /** Ends the run as interrupted; the phone stays in the session, no longer watch-only. */
    takeOverWebDriverRun: (sid: string, runId: string) => json<void>('POST', `/sessions/${seg(sid)}/webdriver-runs/${seg(runId)}/takeover`),

    devices: (sid: string) => json<List<Device>>('GET', `/sessions/${seg(sid)}/devices`),
    allocateDevice: (sid: string, body: AllocateDeviceBody) => json<Device>('POST', `/sessions/${seg(sid)}/devices`, { body }),
    releaseDevice: (sid: string, serial: string) => json<Device>('POST', `/sessions/${seg(sid)}/devices/${seg(serial)}/release`),
    /** Counts as activity: the phone's idle release starts over. */
    keepDevice: (sid: string, serial: string) => json<Device>('POST', `/sessions/${seg(sid)}/devices/${seg(serial)}/keep`),
    act: (sid: string, serial: string, action: DeviceAction) =>
      json<Static<typeof ActionResult>>('POST', `/sessions/${seg(sid)}/devices/${seg(serial)}/actions`, { body: action }),
    install: (sid: string, serial: string, fileId: string, launch: boolean) =>
      json<InstallResult>('POST', `/sessions/${seg(sid)}/devices/${seg(serial)}/install`, { body: { file: fileId, launch } }),
    /** Answers once the phone is back in_use (a minute or more on a real phone). */
    rebootDevice: (sid: string, serial: string) => json<Static<typeof ActionResult>>('POST', `/sessions/${seg(sid)}/devices/${seg(serial)}/reboot`),
    deviceInfo: (sid: string, serial: string) => json<DeviceInfo>('GET', `/sessions/${seg(sid)}/devices/${seg(serial)}/info`),
    /** The phone's remote connection (adb connect / private usbmuxd), with who is connected; 404 while closed. */
    remoteConnect: (sid: string, serial: string) => json<RemoteConnect>('GET', `/sessions/${seg(sid)}/devices/${seg(serial)}/remote-connect`),
    openRemoteConnect: (sid: string, serial: string) => json<RemoteConnect>('POST', `/sessions/${seg(sid)}/devices/${seg(serial)}/remote-connect`, { body: {} }),
    closeRemoteConnect: (sid: string, serial: string) => json<void>('DELETE', `/sessions/${seg(sid)}/devices/${seg(serial)}/remote-connect`),
    adbKeys: () => json<List<AdbKey>>('GET', '/adb-keys'),
    addAdbKey: (publicKey: string, title?: string) => json<AdbKey>('POST', '/adb-keys', { body: { publicKey, ...(title ? { title } : {}) } }),
    deleteAdbKey: (id: string) => json<void>('DELETE', `/adb-keys/${seg(id)}`),
    screenshot: async (sid: string, serial: string) => (await raw('GET', `/sessions/${seg(sid)}/devices/${seg(serial)}/screenshot`)).blob(),
    /** A lossless PNG captured now (screenshot answers the live screen's JPEG while one runs). */
    screenshotPng: async (sid: string, serial: string) => (await raw('GET', `/sessions/${seg(sid)}/devices/${seg(serial)}/screenshot.png`)).blob(),
    phoneApps: (sid: string, serial: string) => json<List<PhoneApp>>('GET', `/sessions/${seg(sid)}/devices/${seg(serial)}/apps`),
    /** `app`: on an iPhone, the bundle id of the app whose Documents to reach (the path is then under /Documents). */
    phoneFiles: (sid: string, serial: string, path: string, app?: string) => json<List<PhoneFile>>('GET', `/sessions/${seg(sid)}/devices/${seg(serial)}/files`, { query: { path, app } }),
    phoneFile: async (sid: string, serial: string, path: string, app?: string) => (await raw('GET', `/sessions/${seg(sid)}/devices/${seg(serial)}/files/content`, { query: { path, app } })).blob(),
    putPhoneFile: (sid: string, serial: string, path: string, content: Blob, app?: string) =>
      raw('PUT', `/sessions/${seg(sid)}/devices/${seg(serial)}/files/content`, { query: { path, app }, bytes: content }).then(() => undefined),
    deletePhoneFile: (sid: string, serial: string, path: string, app?: string) =>
      raw('DELETE', `/sessions/${seg(sid)}/devices/${seg(serial)}/files`, { query: { path, app } }).then(() => undefined),
    /** The iPhone apps that share their Documents (UIFileSharingEnabled). */
    phoneFileApps: (sid: string, serial: string) => json<List<FileApp>>('GET', `/sessions/${seg(sid)}/devices/${seg(serial)}/files/apps`),
    startRecording: (sid: string, serial: string) => json<Recording>('POST', `/sessions/${seg(sid)}/devices/${seg(serial)}/recording`),
    stopRecording: async (sid: string, serial: string) => (await raw('POST', `/sessions/${seg(sid)}/devices/${seg(serial)}/recording/stop`)).blob(),
    shellSocket: (sid: string, serial: string, size: { cols: number; rows: number }) => socket(`/sessions/${seg(sid)}/devices/${seg(serial)}/shell`, size),
    /** The phone's log as text/event-stream (read it with followDeviceLogs). */
    deviceLogs: (sid: string, serial: string, signal?: AbortSignal) => raw('GET', `/sessions/${seg(sid)}/devices/${seg(serial)}/logs`, { signal }),
    /**
     * maxSize: the longest side, in pixels, the viewer shows; minicap then captures no larger. codecs: what the page
     * decodes beyond JPEG and PNG ('h264,jpeg' with WebCodecs), see src/shared/api/live-screen.ts.
     */
    screenSocket: (sid: string, serial: string, maxSize?: number, codecs?: string) => socket(`/sessions/${seg(sid)}/devices/${seg(serial)}/screen`, { maxSize, codecs }),

    instances: (sid: string) => json<List<Instance>>('GET', `/sessions/${seg(sid)}/instances`),
    allocateInstance: (sid: string) => json<Instance>('POST', `/sessions/${seg(sid)}/instances`, { body: { os: 'macos' } }),
    releaseInstance: (sid: string, iid: string) => json<Instance>('POST', `/sessions/${seg(sid)}/instances/${seg(iid)}/release`),
    terminalSocket: (sid: string, iid: string, size: { cols: number; rows: number }, name = 'main') =>
      socket(`/sessions/${seg(sid)}/instances/${seg(iid)}/terminal`, { ...size, name }),

    chats: (sid: string) => json<List<Chat>>('GET', `/sessions/${seg(sid)}/chats`),
    createChat: (sid: string, deviceId?: string) =>
      json<Chat>('POST', `/sessions/${seg(sid)}/chats`, { body: { metadata: deviceId ? { deviceId } : {} } }),
    messages: (sid: string, cid: string, query: { limit?: number; before?: string } = {}) =>
      json<List<Message>>('GET', `/sessions/${seg(sid)}/chats/${seg(cid)}/messages`, { query }),
    postMessage: (sid: string, cid: string, text: string) =>
      json<Message>('POST', `/sessions/${seg(sid)}/chats/${seg(cid)}/messages`, { body: { text } }),
    cancelMessage: (sid: string, cid: string, mid: string) =>
      json<Message>('POST', `/sessions/${seg(sid)}/chats/${seg(cid)}/messages/${seg(mid)}/cancel`),

    /** The lab owner's note on a phone; null removes it. */
    setDeviceNote: (serial: string, note: string | null) => json<FleetDevice>('PATCH', `/fleet/devices/${seg(serial)}`, { body: { note } }),
    testResults: (query: { limit?: number; before?: string; status?: Static<typeof TestResultStatus>; tag?: string } = {}) =>
      json<List<TestResult>>('GET', '/test-results', { query }),
    testResult: (id: string) => json<TestResult>('GET', `/test-results/${seg(id)}`),
    assets: (id: string) => json<List<Asset>>('GET', `/test-results/${seg(id)}/assets`),
    assetBlob: async (id: string, assetId: string) => (await raw('GET', `/test-results/${seg(id)}/assets/${seg(assetId)}`)).blob(),

    files: (query: { limit?: number; before?: string } = {}) => json<List<StoredFile>>('GET', '/files', { query }),
    file: (id: string) => json<StoredFile>('GET', `/files/${seg(id)}`),
    createFile: (filename: string, filesize: number, sha256: string) =>
      json<CreatedFile>('POST', '/files', { body: { filename, filesize, sha256 } }),
    completeFile: (id: string) => json<StoredFile>('POST', `/files/${seg(id)}/complete`),
    deleteFile: (id: string) => json<void>('DELETE', `/files/${seg(id)}`),
    apps: () => json<List<App>>('GET', '/apps'),

    reservations: (query: { from?: string; to?: string } = {}) => json<List<CalendarSlot>>('GET', '/reservations', { query }),
    reserve: (body: ReservationBody) => json<Reservation>('POST', '/reservations', { body }),
    cancelReservation: (id: string) => json<void>('DELETE', `/reservations/${seg(id)}`),
    usage: (query: { from?: string; to?: string; groupBy?: 'member' | 'device' } = {}) => json<Usage>('GET', '/usage', { query }),
    usageCsv: async (query: { from?: string; to?: string; groupBy?: 'member' | 'device' } = {}) =>
      (await raw('GET', '/usage', { query, accept: 'text/csv' })).blob(),

    balance: () => json<Balance>('GET', '/billing/balance'),
    setPlan: (plan: string) => json<Balance>('PUT', '/billing/plan', { body: { plan } }),

    labSettings: () => json<LabSettings>('GET', '/lab/settings', { org: false }),
    labUsage: (query: { from?: string; to?: string } = {}) => json<LabUsage>('GET', '/lab/usage', { query, org: false }),
    updateLabSettings: (patch: LabSettingsPatch) => json<LabSettings>('PATCH', '/lab/settings', { body: patch, org: false }),
    labHosts: () => json<List<MacHost>>('GET', '/lab/hosts', { org: false }),
    addLabHost: (body: CreateMacHostBody) => json<MacHost>('POST', '/lab/hosts', { body, org: false }),
    updateLabHost: (id: string, body: UpdateMacHostBody) => json<MacHost>('PATCH', `/lab/hosts/${seg(id)}`, { body, org: false }),
    deleteLabHost: (id: string) => json<void>('DELETE', `/lab/hosts/${seg(id)}`, { org: false }),
    labProviders: () => json<List<Provider>>('GET', '/lab/providers', { org: false }),
    readLabProviderHostKey: (body: ProviderHostKeyBody) => json<ProviderHostKey>('POST', '/lab/providers/host-key', { body, org: false }),
    addLabProvider: (body: CreateProviderBody) => json<Provider>('POST', '/lab/providers', { body, org: false }),
    updateLabProvider: (id: string, body: UpdateProviderBody) => json<Provider>('PATCH', `/lab/providers/${seg(id)}`, { body, org: false }),
    deleteLabProvider: (id: string) => json<void>('DELETE', `/lab/providers/${seg(id)}`, { org: false }),
    assistant: () => json<AssistantConfig>('GET', '/lab/assistant', { org: false }),
    setAssistant: (body: AssistantConfigBody) => json<AssistantConfig>('PUT', '/lab/assistant', { body, org: false }),
  };
}
