import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newAdbPublicKey } from '../support/adb-keys.js';
import { buildApk, sha256 } from '../support/app-fixtures.js';
import { errorCode, settledLabSettings, useEngine, type CallOptions, type Reply } from '../support/engine.js';
import { waitFor } from '../support/lab.js';
import { readEvents, startScriptedModel, type ScriptedModel } from '../support/scripted-model.js';
import { connectWs, refusedUpgrade } from '../support/ws.js';

/**
 * The authorization matrix: every operation of the API that takes credentials, called by an interactive user and by
 * an API key of each role in the organization "Matrix", and by an account that is not a member of it. Every cell
 * states its outcome; allowed cells also check what the call did, refused cells check that nothing changed.
 */

/** A success status, or an error as [status, error code]: a refusal, or for an allowed caller the lookup after it. */
type Expect = 200 | 201 | 202 | 204 | readonly [400 | 401 | 403 | 404 | 409, string];
/** One outcome per role, in the order of ROLES. */
type Row = readonly [Expect, Expect, Expect, Expect];
interface Cells {
  interactive: Row;
  key: Row;
}

const ROLES = ['admin', 'readwrite', 'readonly', 'non-member'] as const;
type Role = (typeof ROLES)[number];
const KINDS = ['interactive', 'key'] as const;
type Kind = (typeof KINDS)[number];

// Refusals.
/** The caller asked for an organization they are not in (X-Organization-Id: Matrix). */
const NM: Expect = [403, 'not_a_member'];
/** The non-member's key is bound to their Personal organization, and asked for Matrix. */
const WO: Expect = [403, 'wrong_organization'];
const IO: Expect = [403, 'interactive_only'];
const LOW: Expect = [403, 'insufficient_role'];
const NLO: Expect = [403, 'not_lab_owner'];
/** An organization in the path that the caller is not in. */
const ONF: Expect = [404, 'organization_not_found'];
/** PATCH and DELETE /organizations/{id} declare no 404: an organization the caller is not in is a 403. */
const ONF403: Expect = [403, 'organization_not_found'];
// The spec declares no 403 on some header-scoped operations: the refusal keeps its code at the nearest declared status.
const NM401: Expect = [401, 'not_a_member'];
const WO401: Expect = [401, 'wrong_organization'];
const NM404: Expect = [404, 'not_a_member'];
const WO404: Expect = [404, 'wrong_organization'];
// Allowed callers whose call gets past authorization and stops at what the lab lacks (no Mac host, no held phone).
const NO_CAPACITY: Expect = [409, 'no_capacity'];
const NO_INSTANCE: Expect = [404, 'instance_not_found'];
const NOT_IN_USE: Expect = [409, 'device_not_in_use'];
/** No WebDriver run drives the session's phone: nothing to take over. */
const NO_RUN: Expect = [404, 'webdriver_run_not_found'];
const NO_IMAGE: Expect = [404, 'image_not_found'];
/** Neither the reservation's creator nor an admin of its organization. */
const NRO: Expect = [403, 'not_reservation_owner'];

/** Each line: the outcome for admin, readwrite, readonly and non-member, by interactive token and by API key. */
const MATRIX = {
  // Account
  'GET /me': { interactive: [200, 200, 200, 200], key: [200, 200, 200, 200] },
  'DELETE /me': { interactive: [[409, 'member_of_other_organizations'], [409, 'member_of_other_organizations'], [409, 'member_of_other_organizations'], 204], key: [IO, IO, IO, IO] },
  // API keys
  'GET /keys': { interactive: [200, 200, 200, NM], key: [IO, IO, IO, WO] },
  'POST /keys': { interactive: [201, 201, 201, NM], key: [IO, IO, IO, WO] },
  'DELETE /keys/{id}': { interactive: [204, 204, LOW, NM], key: [IO, IO, IO, WO] },
  // Invitations
  'GET /invitations': { interactive: [200, 200, 200, 200], key: [IO, IO, IO, IO] },
  'POST /invitations/{invitationId}/accept': { interactive: [204, 204, 204, 204], key: [IO, IO, IO, IO] },
  'POST /invitations/{invitationId}/reject': { interactive: [204, 204, 204, 204], key: [IO, IO, IO, IO] },
  'GET /organizations/{id}/invitations': { interactive: [200, LOW, LOW, ONF], key: [200, LOW, LOW, ONF] },
  'POST /organizations/{id}/invitations': { interactive: [201, LOW, LOW, ONF], key: [201, LOW, LOW, ONF] },
  'DELETE /organizations/{id}/invitations/{invitationId}': { interactive: [204, LOW, LOW, ONF], key: [204, LOW, LOW, ONF] },
  // Organizations and members
  'GET /organizations': { interactive: [200, 200, 200, 200], key: [200, 200, 200, 200] },
  'POST /organizations': { interactive: [201, 201, 201, 201], key: [201, 201, 201, 201] },
  'PATCH /organizations/{id}': { interactive: [200, LOW, LOW, ONF403], key: [IO, IO, IO, IO] },
  // Matrix has other members, so even its admin meets the sole-member rule (the 204 is a test of its own below).
  'DELETE /organizations/{id}': { interactive: [[409, 'not_sole_member'], LOW, LOW, ONF403], key: [IO, IO, IO, IO] },
  'GET /organizations/{id}/members': { interactive: [200, 200, 200, ONF], key: [200, 200, 200, ONF] },
  'PATCH /organizations/{id}/members/{userId}': { interactive: [200, LOW, LOW, ONF], key: [200, LOW, LOW, ONF] },
  'DELETE /organizations/{id}/members/{userId}': { interactive: [204, LOW, LOW, ONF], key: [204, LOW, LOW, ONF] },
  // Billing
  'GET /billing/balance': { interactive: [200, 200, 200, NM], key: [200, 200, 200, WO] },
  'PUT /billing/plan': { interactive: [200, LOW, LOW, NM], key: [200, LOW, LOW, WO] },
  // Sessions
  'GET /sessions': { interactive: [200, 200, 200, NM], key: [200, 200, 200, WO] },
  'POST /sessions': { interactive: [201, 201, LOW, NM], key: [201, 201, LOW, WO] },
  'GET /sessions/{sessionId}': { interactive: [200, 200, 200, NM], key: [200, 200, 200, WO] },
  // Devices (the lab's one phone is unplugged: an allocation queues)
  'GET /sessions/{sessionId}/devices': { interactive: [200, 200, 200, NM], key: [200, 200, 200, WO] },
  'GET /sessions/{sessionId}/webdriver-runs': { interactive: [200, 200, 200, NM], key: [200, 200, 200, WO] },
  'POST /sessions/{sessionId}/webdriver-runs/{runId}/takeover': { interactive: [NO_RUN, NO_RUN, LOW, NM], key: [NO_RUN, NO_RUN, LOW, WO] },
  'POST /sessions/{sessionId}/devices': { interactive: [201, 201, LOW, NM], key: [201, 201, LOW, WO] },
  'GET /sessions/{sessionId}/devices/{deviceId}': { interactive: [200, 200, 200, NM], key: [200, 200, 200, WO] },
  'POST /sessions/{sessionId}/devices/{deviceId}/release': { interactive: [202, 202, LOW, NM], key: [202, 202, LOW, WO] },
  'GET /sessions/{sessionId}/devices/{deviceId}/screenshot': { interactive: [NOT_IN_USE, NOT_IN_USE, NOT_IN_USE, NM], key: [NOT_IN_USE, NOT_IN_USE, NOT_IN_USE, WO] },
  'GET /sessions/{sessionId}/devices/{deviceId}/elements': { interactive: [NOT_IN_USE, NOT_IN_USE, NOT_IN_USE, NM], key: [NOT_IN_USE, NOT_IN_USE, NOT_IN_USE, WO] },
  'POST /sessions/{sessionId}/devices/{deviceId}/actions': { interactive: [NOT_IN_USE, NOT_IN_USE, LOW, NM], key: [NOT_IN_USE, NOT_IN_USE, LOW, WO] },
  'POST /sessions/{sessionId}/devices/{deviceId}/install': { interactive: [NOT_IN_USE, NOT_IN_USE, LOW, NM], key: [NOT_IN_USE, NOT_IN_USE, LOW, WO] },
  'POST /sessions/{sessionId}/devices/{deviceId}/reboot': { interactive: [NOT_IN_USE, NOT_IN_USE, LOW, NM], key: [NOT_IN_USE, NOT_IN_USE, LOW, WO] },
  'GET /sessions/{sessionId}/devices/{deviceId}/screen': { interactive: [NOT_IN_USE, NOT_IN_USE, NOT_IN_USE, NM], key: [NOT_IN_USE, NOT_IN_USE, NOT_IN_USE, WO] },
  'GET /sessions/{sessionId}/devices/{deviceId}/info': { interactive: [NOT_IN_USE, NOT_IN_USE, NOT_IN_USE, NM], key: [NOT_IN_USE, NOT_IN_USE, NOT_IN_USE, WO] },
  'GET /sessions/{sessionId}/devices/{deviceId}/logs': { interactive: [NOT_IN_USE, NOT_IN_USE, NOT_IN_USE, NM], key: [NOT_IN_USE, NOT_IN_USE, NOT_IN_USE, WO] },
  'POST /sessions/{sessionId}/devices/{deviceId}/remote-connect': { interactive: [NOT_IN_USE, NOT_IN_USE, LOW, NM], key: [NOT_IN_USE, NOT_IN_USE, LOW, WO] },
  'GET /sessions/{sessionId}/devices/{deviceId}/remote-connect': { interactive: [NOT_IN_USE, NOT_IN_USE, NOT_IN_USE, NM], key: [NOT_IN_USE, NOT_IN_USE, NOT_IN_USE, WO] },
  'DELETE /sessions/{sessionId}/devices/{deviceId}/remote-connect': { interactive: [NOT_IN_USE, NOT_IN_USE, LOW, NM], key: [NOT_IN_USE, NOT_IN_USE, LOW, WO] },
  // adb keys are the caller's own, in no organization: every account manages its own
  'GET /adb-keys': { interactive: [200, 200, 200, 200], key: [200, 200, 200, 200] },
  'POST /adb-keys': { interactive: [201, 201, 201, 201], key: [201, 201, 201, 201] },
  'DELETE /adb-keys/{id}': { interactive: [204, 204, 204, 204], key: [204, 204, 204, 204] },
  'GET /sessions/{sessionId}/devices/{deviceId}/screenshot.png': { interactive: [NOT_IN_USE, NOT_IN_USE, NOT_IN_USE, NM], key: [NOT_IN_USE, NOT_IN_USE, NOT_IN_USE, WO] },
  'GET /sessions/{sessionId}/devices/{deviceId}/apps': { interactive: [NOT_IN_USE, NOT_IN_USE, NOT_IN_USE, NM], key: [NOT_IN_USE, NOT_IN_USE, NOT_IN_USE, WO] },
  'GET /sessions/{sessionId}/devices/{deviceId}/files/apps': { interactive: [NOT_IN_USE, NOT_IN_USE, NOT_IN_USE, NM], key: [NOT_IN_USE, NOT_IN_USE, NOT_IN_USE, WO] },
  'GET /sessions/{sessionId}/devices/{deviceId}/files': { interactive: [NOT_IN_USE, NOT_IN_USE, NOT_IN_USE, NM], key: [NOT_IN_USE, NOT_IN_USE, NOT_IN_USE, WO] },
  'GET /sessions/{sessionId}/devices/{deviceId}/files/content': { interactive: [NOT_IN_USE, NOT_IN_USE, NOT_IN_USE, NM], key: [NOT_IN_USE, NOT_IN_USE, NOT_IN_USE, WO] },
  'DELETE /sessions/{sessionId}/devices/{deviceId}/files': { interactive: [NOT_IN_USE, NOT_IN_USE, LOW, NM], key: [NOT_IN_USE, NOT_IN_USE, LOW, WO] },
  'PUT /sessions/{sessionId}/devices/{deviceId}/files/content': { interactive: [NOT_IN_USE, NOT_IN_USE, LOW, NM], key: [NOT_IN_USE, NOT_IN_USE, LOW, WO] },
  'POST /sessions/{sessionId}/devices/{deviceId}/recording': { interactive: [NOT_IN_USE, NOT_IN_USE, LOW, NM], key: [NOT_IN_USE, NOT_IN_USE, LOW, WO] },
  'POST /sessions/{sessionId}/devices/{deviceId}/recording/stop': { interactive: [NOT_IN_USE, NOT_IN_USE, LOW, NM], key: [NOT_IN_USE, NOT_IN_USE, LOW, WO] },
  'GET /sessions/{sessionId}/devices/{deviceId}/shell': { interactive: [NOT_IN_USE, NOT_IN_USE, LOW, NM], key: [NOT_IN_USE, NOT_IN_USE, LOW, WO] },
  'PATCH /sessions/{sessionId}': { interactive: [200, 200, LOW, NM], key: [200, 200, LOW, WO] },
  'POST /sessions/{sessionId}/end': { interactive: [202, 202, LOW, NM], key: [202, 202, LOW, WO] },
  'GET /ws': { interactive: [200, 200, 200, NM], key: [200, 200, 200, WO] },
  'POST /sessions/{sessionId}/devices/{deviceId}/keep': { interactive: [200, 200, LOW, NM], key: [200, 200, LOW, WO] },
  // Sharing: reservations and usage
  'POST /reservations': { interactive: [201, 201, LOW, NM], key: [201, 201, LOW, WO] },
  'GET /reservations': { interactive: [200, 200, 200, NM], key: [200, 200, 200, WO] },
  'DELETE /reservations/{id}': { interactive: [204, NRO, NRO, NM], key: [204, NRO, NRO, WO] },
  'GET /usage': { interactive: [200, 200, 200, NM], key: [200, 200, 200, WO] },
  // Fleet
  'GET /fleet/devices': { interactive: [200, 200, 200, NM], key: [200, 200, 200, WO] },
  'GET /fleet/hosts': { interactive: [200, 200, 200, NM], key: [200, 200, 200, WO] },
  'GET /fleet/providers': { interactive: [200, 200, 200, NM], key: [200, 200, 200, WO] },
  // A phone's note is the lab owner's (phones are the lab's, not an organization's).
  'PATCH /fleet/devices/{serial}': { interactive: [NLO, NLO, NLO, NLO], key: [IO, IO, IO, IO] },
  // Instances (the lab has no Mac host)
  'GET /sessions/{sessionId}/instances': { interactive: [200, 200, 200, NM], key: [200, 200, 200, WO] },
  'POST /sessions/{sessionId}/instances': { interactive: [NO_CAPACITY, NO_CAPACITY, LOW, NM], key: [NO_CAPACITY, NO_CAPACITY, LOW, WO] },
  'GET /sessions/{sessionId}/instances/{instanceId}': { interactive: [NO_INSTANCE, NO_INSTANCE, NO_INSTANCE, NM], key: [NO_INSTANCE, NO_INSTANCE, NO_INSTANCE, WO] },
  'POST /sessions/{sessionId}/instances/{instanceId}/release': { interactive: [NO_INSTANCE, NO_INSTANCE, LOW, NM], key: [NO_INSTANCE, NO_INSTANCE, LOW, WO] },
  'POST /sessions/{sessionId}/instances/{instanceId}/exec': { interactive: [NO_INSTANCE, NO_INSTANCE, LOW, NM], key: [NO_INSTANCE, NO_INSTANCE, LOW, WO] },
  'GET /sessions/{sessionId}/instances/{instanceId}/terminal': { interactive: [NO_INSTANCE, NO_INSTANCE, LOW, NM], key: [NO_INSTANCE, NO_INSTANCE, LOW, WO] },
  // Chats
  'GET /sessions/{sessionId}/chats': { interactive: [200, 200, 200, NM], key: [200, 200, 200, WO] },
  'POST /sessions/{sessionId}/chats': { interactive: [201, 201, LOW, NM], key: [201, 201, LOW, WO] },
  'GET /sessions/{sessionId}/chats/{chatId}': { interactive: [200, 200, 200, NM404], key: [200, 200, 200, WO404] },
  'GET /sessions/{sessionId}/chats/{chatId}/messages': { interactive: [200, 200, 200, NM404], key: [200, 200, 200, WO404] },
  'POST /sessions/{sessionId}/chats/{chatId}/messages': { interactive: [201, 201, LOW, NM], key: [201, 201, LOW, WO] },
  'GET /sessions/{sessionId}/chats/{chatId}/messages/{messageId}': { interactive: [200, 200, 200, NM404], key: [200, 200, 200, WO404] },
  'GET /sessions/{sessionId}/chats/{chatId}/messages/{messageId}/events': { interactive: [200, 200, 200, NM404], key: [200, 200, 200, WO404] },
  'GET /sessions/{sessionId}/chats/{chatId}/messages/{messageId}/tool-calls': { interactive: [200, 200, 200, NM404], key: [200, 200, 200, WO404] },
  'GET /sessions/{sessionId}/chats/{chatId}/messages/{messageId}/tool-calls/{toolCallId}/image': { interactive: [NO_IMAGE, NO_IMAGE, NO_IMAGE, NM404], key: [NO_IMAGE, NO_IMAGE, NO_IMAGE, WO404] },
  'POST /sessions/{sessionId}/chats/{chatId}/messages/{messageId}/cancel': { interactive: [200, 200, LOW, NM], key: [200, 200, LOW, WO] },
  // Test results: any member may report, whatever the role
  'GET /test-results': { interactive: [200, 200, 200, NM401], key: [200, 200, 200, WO401] },
  'POST /test-results': { interactive: [201, 201, 201, NM401], key: [201, 201, 201, WO401] },
  'GET /test-results/{testResultId}': { interactive: [200, 200, 200, NM404], key: [200, 200, 200, WO404] },
  'PATCH /test-results/{testResultId}': { interactive: [200, 200, 200, NM404], key: [200, 200, 200, WO404] },
  'GET /test-results/{testResultId}/assets': { interactive: [200, 200, 200, NM404], key: [200, 200, 200, WO404] },
  'POST /test-results/{testResultId}/assets': { interactive: [201, 201, 201, NM404], key: [201, 201, 201, WO404] },
  'GET /test-results/{testResultId}/assets/{assetId}': { interactive: [200, 200, 200, NM404], key: [200, 200, 200, WO404] },
  // Files and apps
  'GET /files': { interactive: [200, 200, 200, NM], key: [200, 200, 200, WO] },
  'POST /files': { interactive: [201, 201, LOW, NM], key: [201, 201, LOW, WO] },
  'POST /files/upload': { interactive: [201, 201, LOW, NM], key: [201, 201, LOW, WO] },
  'GET /files/{fileId}': { interactive: [200, 200, 200, NM], key: [200, 200, 200, WO] },
  'DELETE /files/{fileId}': { interactive: [204, 204, LOW, NM], key: [204, 204, LOW, WO] },
  'POST /files/{fileId}/complete': { interactive: [200, 200, LOW, NM], key: [200, 200, LOW, WO] },
  'GET /apps': { interactive: [200, 200, 200, NM], key: [200, 200, 200, WO] },
  'GET /apps/{appId}': { interactive: [200, 200, 200, NM], key: [200, 200, 200, WO] },
  // Lab administration: the lab owner only (none of these callers), signed in interactively
  'GET /lab/settings': { interactive: [NLO, NLO, NLO, NLO], key: [IO, IO, IO, IO] },
  'PATCH /lab/settings': { interactive: [NLO, NLO, NLO, NLO], key: [IO, IO, IO, IO] },
  'GET /lab/assistant': { interactive: [NLO, NLO, NLO, NLO], key: [IO, IO, IO, IO] },
  'PUT /lab/assistant': { interactive: [NLO, NLO, NLO, NLO], key: [IO, IO, IO, IO] },
  'PATCH /lab/assistant': { interactive: [NLO, NLO, NLO, NLO], key: [IO, IO, IO, IO] },
  'GET /lab/hosts': { interactive: [NLO, NLO, NLO, NLO], key: [IO, IO, IO, IO] },
  'POST /lab/hosts': { interactive: [NLO, NLO, NLO, NLO], key: [IO, IO, IO, IO] },
  'GET /lab/hosts/{hostId}': { interactive: [NLO, NLO, NLO, NLO], key: [IO, IO, IO, IO] },
  'PATCH /lab/hosts/{hostId}': { interactive: [NLO, NLO, NLO, NLO], key: [IO, IO, IO, IO] },
  'DELETE /lab/hosts/{hostId}': { interactive: [NLO, NLO, NLO, NLO], key: [IO, IO, IO, IO] },
  'GET /lab/providers': { interactive: [NLO, NLO, NLO, NLO], key: [IO, IO, IO, IO] },
  'POST /lab/providers': { interactive: [NLO, NLO, NLO, NLO], key: [IO, IO, IO, IO] },
  'POST /lab/providers/host-key': { interactive: [NLO, NLO, NLO, NLO], key: [IO, IO, IO, IO] },
  'GET /lab/usage': { interactive: [NLO, NLO, NLO, NLO], key: [IO, IO, IO, IO] },
  'GET /lab/providers/{providerId}': { interactive: [NLO, NLO, NLO, NLO], key: [IO, IO, IO, IO] },
  'PATCH /lab/providers/{providerId}': { interactive: [NLO, NLO, NLO, NLO], key: [IO, IO, IO, IO] },
  'DELETE /lab/providers/{providerId}': { interactive: [NLO, NLO, NLO, NLO], key: [IO, IO, IO, IO] },
  'GET /metrics': { interactive: [NLO, NLO, NLO, NLO], key: [IO, IO, IO, IO] },
  'POST /lab/backup': { interactive: [NLO, NLO, NLO, NLO], key: [IO, IO, IO, IO] },
} as const satisfies Record<string, Cells>;
type Op = keyof typeof MATRIX;

interface Caller {
  kind: Kind;
  role: Role;
  bearer: string;
  /** The account's interactive token, for checking what a call did. */
  token: string;
  userId: string;
  email: string;
  /**
   * X-Organization-Id sent on header-scoped operations: interactive users and the non-member's key name Matrix;
   * a member's key sends none, so its own organization (Matrix) is selected.
   */
  org?: string;
}

/** One attempt at an operation: the reply, and what must hold afterwards if it was allowed or refused. */
interface Attempt {
  reply: Reply;
  ifAllowed?: () => Promise<void>;
  ifRefused?: () => Promise<void>;
}

const lab = useEngine();
let model: ScriptedModel;
let matrix: string;
/** A session of Matrix, created by the owner. */
let matrixSession: string;
/** A pending invitation of Matrix to an email that has no account. */
let matrixInvitation: string;
/** The member whose role the role-change cells change (readonly at rest). */
let target: { token: string; user: { id: string; email: string } };
/** Matrix's chat, a user message, and the assistant's answer with its one tool call (a screenshot, with no phone). */
let chat: string;
let userMessage: string;
let answer: string;
let toolCall: string;
/** Matrix's test result and its asset. */
let testResult: string;
let asset: string;
const ASSET_CONTENT = 'matrix asset content';
/** Matrix's ready app file, and its app. */
let file: string;
let app: string;
/** Matrix's queued allocation of the lab's one (unplugged) phone. */
let device: string;
const PHONE = 'matrix-phone-1';
const UNKNOWN = '6f1c1a52-52a8-4a8e-9a55-1b5f3c9f0000';
const MATRIX_PLAN = 'team';
const callers = {} as Record<Kind, Record<Role, Caller>>;
let seq = 0;

const owner = (method: string, path: string, options: CallOptions = {}) =>
  lab.c.call(method, path, { token: lab.owner, ...options });
/** The owner, acting in Matrix. */
const inMatrix = (method: string, path: string, body?: unknown) => owner(method, path, { org: matrix, body });
const as = (c: Caller, method: string, path: string, options: { body?: unknown; scoped?: boolean } = {}) =>
  lab.c.call(method, path, { token: c.bearer, org: options.scoped ? c.org : undefined, body: options.body });
const headersOf = (c: Caller): Record<string, string> => ({ authorization: `Bearer ${c.bearer}`, ...(c.org ? { 'x-organization-id': c.org } : {}) });

/** A multipart/form-data POST as the caller, in their scoped organization. */
async function postForm(c: Caller, path: string, form: FormData): Promise<Reply> {
  const res = await fetch(lab.t.api + path, { method: 'POST', headers: headersOf(c), body: form });
  return { status: res.status, body: await res.json(), headers: res.headers };
}

const ids = (r: Reply): string[] => {
  expect(r.status, JSON.stringify(r.body)).toBe(200);
  return r.body.data.map((x: { id: string }) => x.id);
};
const ownerKeyIds = async () => ids(await inMatrix('GET', '/keys'));
const ownerInvitations = async (org = matrix): Promise<{ id: string; email: string }[]> => {
  const r = await owner('GET', `/organizations/${org}/invitations`);
  expect(r.status).toBe(200);
  return r.body.data;
};
const ownerSessionIds = async () => ids(await inMatrix('GET', '/sessions?limit=500'));
const orgsOf = async (token: string): Promise<{ id: string; name: string; role: string }[]> => {
  const r = await lab.c.call('GET', '/organizations', { token });
  expect(r.status).toBe(200);
  return r.body.data;
};
const matrixName = async () => (await orgsOf(lab.owner)).find((o) => o.id === matrix)!.name;
async function roleOfTarget(): Promise<string> {
  const r = await owner('GET', `/organizations/${matrix}/members`);
  expect(r.status).toBe(200);
  return r.body.data.find((m: { userId: string }) => m.userId === target.user.id).role;
}
async function matrixPlan(): Promise<string> {
  const r = await inMatrix('GET', '/billing/balance');
  expect(r.status).toBe(200);
  return r.body.plan;
}
const sessionDevices = async (): Promise<{ id: string; status: string; releasedAt: string | null }[]> => {
  const r = await inMatrix('GET', `/sessions/${matrixSession}/devices`);
  expect(r.status).toBe(200);
  return r.body.data;
};
const ownerFileIds = async () => ids(await inMatrix('GET', '/files?limit=500'));
const ownerTestResult = async () => (await inMatrix('GET', `/test-results/${testResult}`)).body;
const assetNames = async (): Promise<string[]> => (await inMatrix('GET', `/test-results/${testResult}/assets`)).body.data.map((a: { name: string }) => a.name);
const chatMessages = async (): Promise<{ id: string; text: string }[]> => (await inMatrix('GET', `/sessions/${matrixSession}/chats/${chat}/messages`)).body.data;
const labSettings = async () => settledLabSettings((await owner('GET', '/lab/settings')).body);
const assistantConfig = async () => (await owner('GET', '/lab/assistant')).body;
const labHosts = async () => ids(await owner('GET', '/lab/hosts'));

/** The owner allocates the unplugged phone for Matrix: the allocation queues. */
async function queuedAllocation(): Promise<string> {
  const r = await inMatrix('POST', `/sessions/${matrixSession}/devices`, { filters: [{ attribute: 'platform', operator: 'EQUALS', value: 'android' }] });
  expect(r.status, JSON.stringify(r.body)).toBe(201);
  expect(r.body.status).toBe('queued');
  return r.body.id;
}
const release = async (id: string) => expect((await inMatrix('POST', `/sessions/${matrixSession}/devices/${id}/release`)).status).toBe(202);

/** A unique APK, declared by the owner in Matrix and its bytes uploaded: pendingUpload until someone completes it. */
async function uploadedFile(): Promise<string> {
  const apk = buildApk({ packageName: `com.example.matrix${++seq}`, label: `Matrix ${seq}`, versionCode: seq });
  const created = await inMatrix('POST', '/files', { filename: `m${seq}.apk`, filesize: apk.length, sha256: sha256(apk) });
  expect(created.status).toBe(201);
  const put = await fetch(created.body.upload.url, { method: 'PUT', headers: { 'content-type': 'application/octet-stream' }, body: new Uint8Array(apk) });
  expect(put.status).toBe(200);
  return created.body.id;
}
const fileStatus = async (id: string) => (await inMatrix('GET', `/files/${id}`)).body.status as string;

/** A new account of the caller's kind and role, for operations that would spend the shared callers (DELETE /me). */
async function freshCaller(kind: Kind, role: Role): Promise<Caller> {
  const email = `fresh-${++seq}@lab.test`;
  const account = await lab.c.signup(email);
  if (role !== 'non-member') await lab.c.addMember(lab.owner, matrix, account.token, email, role);
  const key = await lab.c.createKey(account.token, role === 'non-member' ? undefined : matrix, 'fresh key');
  const base = { role, token: account.token, userId: account.user.id, email };
  return kind === 'interactive'
    ? { ...base, kind, bearer: account.token, org: matrix }
    : { ...base, kind, bearer: key, org: role === 'non-member' ? matrix : undefined };
}

/** A new organization of the owner's with a pending invitation for the caller's email. */
async function invitationFor(c: Caller): Promise<{ org: string; invitation: string }> {
  const org = await lab.c.createOrganization(lab.owner, `Invites ${++seq}`);
  const inv = await owner('POST', `/organizations/${org}/invitations`, { body: { email: c.email, role: 'readonly' } });
  expect(inv.status).toBe(201);
  return { org, invitation: inv.body.id };
}

const s = () => `/sessions/${matrixSession}`;
const m = (id: string) => `${s()}/chats/${chat}/messages/${id}`;

const OPERATIONS: Record<Op, (c: Caller) => Promise<Attempt>> = {
  // An API key acts for the member who created it.
  'GET /me': async (c) => {
    const reply = await as(c, 'GET', '/me');
    return { reply, ifAllowed: async () => expect(reply.body).toMatchObject({ id: c.userId, email: c.email }) };
  },

  'DELETE /me': async (shared) => {
    const c = await freshCaller(shared.kind, shared.role);
    const reply = await as(c, 'DELETE', '/me');
    return {
      reply,
      ifAllowed: async () => {
        const me = await lab.c.call('GET', '/me', { token: c.token });
        expect([me.status, errorCode(me)]).toEqual([401, 'unauthorized']);
      },
      ifRefused: async () => expect((await lab.c.call('GET', '/me', { token: c.token })).body.id).toBe(c.userId),
    };
  },

  'GET /keys': async (c) => {
    const reply = await as(c, 'GET', '/keys', { scoped: true });
    return {
      reply,
      ifAllowed: async () => {
        const suffixes = reply.body.data.map((k: { apiKeySuffix: string }) => k.apiKeySuffix);
        for (const role of ['admin', 'readwrite', 'readonly'] as const) expect(suffixes).toContain(callers.key[role].bearer.slice(-6));
        expect(suffixes).not.toContain(callers.key['non-member'].bearer.slice(-6));
        for (const k of reply.body.data) expect(k).not.toHaveProperty('apiKey');
      },
    };
  },

  'POST /keys': async (c) => {
    const name = `cell key ${++seq}`;
    const reply = await as(c, 'POST', '/keys', { scoped: true, body: { name } });
    return {
      reply,
      ifAllowed: async () => {
        expect(reply.body.name).toBe(name);
        expect(reply.body.apiKey).toMatch(/^mob_/);
        expect(await ownerKeyIds()).toContain(reply.body.id);
        // The new key is bound to Matrix: without a header it acts there.
        expect((await lab.c.call('GET', s(), { token: reply.body.apiKey })).status).toBe(200);
      },
      ifRefused: async () => {
        const r = await inMatrix('GET', '/keys');
        expect(r.body.data.map((k: { name: string }) => k.name)).not.toContain(name);
      },
    };
  },

  'DELETE /keys/{id}': async (c) => {
    const victim = await inMatrix('POST', '/keys', { name: `victim ${++seq}` });
    expect(victim.status).toBe(201);
    const reply = await as(c, 'DELETE', `/keys/${victim.body.id}`, { scoped: true });
    return {
      reply,
      ifAllowed: async () => {
        expect(await ownerKeyIds()).not.toContain(victim.body.id);
        const used = await lab.c.call('GET', '/me', { token: victim.body.apiKey });
        expect([used.status, errorCode(used)]).toEqual([401, 'unauthorized']);
      },
      ifRefused: async () => {
        expect(await ownerKeyIds()).toContain(victim.body.id);
        expect((await lab.c.call('GET', '/me', { token: victim.body.apiKey })).status).toBe(200);
      },
    };
  },

  'GET /invitations': async (c) => {
    const reply = await as(c, 'GET', '/invitations');
    return {
      reply,
      ifAllowed: async () => {
        expect(reply.body.object).toBe('list');
        for (const inv of reply.body.data) expect(inv.email).toBe(c.email);
        expect(ids(reply)).not.toContain(matrixInvitation);
      },
    };
  },

  'POST /invitations/{invitationId}/accept': async (c) => {
    const { org, invitation } = await invitationFor(c);
    const reply = await as(c, 'POST', `/invitations/${invitation}/accept`);
    return {
      reply,
      ifAllowed: async () => {
        expect((await orgsOf(c.token)).find((o) => o.id === org)).toMatchObject({ role: 'readonly' });
        expect((await ownerInvitations(org)).map((i) => i.id)).not.toContain(invitation);
      },
      ifRefused: async () => {
        expect((await orgsOf(c.token)).map((o) => o.id)).not.toContain(org);
        expect((await ownerInvitations(org)).map((i) => i.id)).toContain(invitation);
      },
    };
  },

  'POST /invitations/{invitationId}/reject': async (c) => {
    const { org, invitation } = await invitationFor(c);
    const reply = await as(c, 'POST', `/invitations/${invitation}/reject`);
    return {
      reply,
      ifAllowed: async () => {
        expect((await orgsOf(c.token)).map((o) => o.id)).not.toContain(org);
        expect((await ownerInvitations(org)).map((i) => i.id)).not.toContain(invitation);
      },
      ifRefused: async () => expect((await ownerInvitations(org)).map((i) => i.id)).toContain(invitation),
    };
  },

  'GET /organizations/{id}/invitations': async (c) => {
    const reply = await as(c, 'GET', `/organizations/${matrix}/invitations`);
    return {
      reply,
      ifAllowed: async () => {
        expect(ids(reply)).toContain(matrixInvitation);
        for (const inv of reply.body.data) expect(inv.organizationId).toBe(matrix);
      },
    };
  },

  'POST /organizations/{id}/invitations': async (c) => {
    const email = `invitee-${++seq}@lab.test`;
    const reply = await as(c, 'POST', `/organizations/${matrix}/invitations`, { body: { email, role: 'readonly' } });
    return {
      reply,
      ifAllowed: async () => {
        expect(reply.body).toMatchObject({ email, role: 'readonly', status: 'pending', organizationId: matrix, invitedBy: c.userId });
        expect((await ownerInvitations()).map((i) => i.id)).toContain(reply.body.id);
      },
      ifRefused: async () => expect((await ownerInvitations()).map((i) => i.email)).not.toContain(email),
    };
  },

  'DELETE /organizations/{id}/invitations/{invitationId}': async (c) => {
    const inv = await owner('POST', `/organizations/${matrix}/invitations`, { body: { email: `revokable-${++seq}@lab.test`, role: 'readwrite' } });
    expect(inv.status).toBe(201);
    const reply = await as(c, 'DELETE', `/organizations/${matrix}/invitations/${inv.body.id}`);
    return {
      reply,
      ifAllowed: async () => expect((await ownerInvitations()).map((i) => i.id)).not.toContain(inv.body.id),
      ifRefused: async () => expect((await ownerInvitations()).map((i) => i.id)).toContain(inv.body.id),
    };
  },

  'GET /organizations': async (c) => {
    const reply = await as(c, 'GET', '/organizations');
    return {
      reply,
      ifAllowed: async () => {
        const mine = reply.body.data.find((o: { id: string }) => o.id === matrix);
        if (c.role === 'non-member') expect(mine).toBeUndefined();
        else expect(mine).toMatchObject({ id: matrix, role: c.role, personal: false });
      },
    };
  },

  'POST /organizations': async (c) => {
    const name = `Created ${++seq}`;
    const reply = await as(c, 'POST', '/organizations', { body: { name } });
    return {
      reply,
      ifAllowed: async () => {
        expect(reply.body).toMatchObject({ name, role: 'admin', personal: false });
        expect((await orgsOf(c.token)).find((o) => o.id === reply.body.id)).toMatchObject({ name, role: 'admin' });
      },
      ifRefused: async () => expect((await orgsOf(c.token)).map((o) => o.name)).not.toContain(name),
    };
  },

  'PATCH /organizations/{id}': async (c) => {
    const name = `Matrix renamed ${++seq}`;
    const reply = await as(c, 'PATCH', `/organizations/${matrix}`, { body: { name } });
    return {
      reply,
      ifAllowed: async () => {
        expect(reply.body).toMatchObject({ id: matrix, name });
        expect(await matrixName()).toBe(name);
        expect((await owner('PATCH', `/organizations/${matrix}`, { body: { name: 'Matrix' } })).status).toBe(200);
      },
      ifRefused: async () => expect(await matrixName()).toBe('Matrix'),
    };
  },

  'DELETE /organizations/{id}': async (c) => ({
    reply: await as(c, 'DELETE', `/organizations/${matrix}`),
    ifRefused: async () => {
      expect(await matrixName()).toBe('Matrix');
      expect((await owner('GET', `/organizations/${matrix}/members`)).status).toBe(200);
    },
  }),

  'GET /organizations/{id}/members': async (c) => {
    const reply = await as(c, 'GET', `/organizations/${matrix}/members`);
    return {
      reply,
      ifAllowed: async () => {
        const members = reply.body.data as { userId: string; role: string }[];
        expect(members).toContainEqual(expect.objectContaining({ userId: c.userId, role: c.role }));
        expect(members).toContainEqual(expect.objectContaining({ userId: target.user.id, role: 'readonly' }));
        expect(members.map((x) => x.userId)).not.toContain(callers.interactive['non-member'].userId);
      },
    };
  },

  'PATCH /organizations/{id}/members/{userId}': async (c) => {
    const reply = await as(c, 'PATCH', `/organizations/${matrix}/members/${target.user.id}`, { body: { role: 'readwrite' } });
    return {
      reply,
      ifAllowed: async () => {
        expect(reply.body).toMatchObject({ userId: target.user.id, role: 'readwrite' });
        expect(await roleOfTarget()).toBe('readwrite');
        expect((await owner('PATCH', `/organizations/${matrix}/members/${target.user.id}`, { body: { role: 'readonly' } })).status).toBe(200);
      },
      ifRefused: async () => expect(await roleOfTarget()).toBe('readonly'),
    };
  },

  'DELETE /organizations/{id}/members/{userId}': async (c) => {
    const reply = await as(c, 'DELETE', `/organizations/${matrix}/members/${target.user.id}`);
    return {
      reply,
      ifAllowed: async () => {
        expect((await owner('GET', `/organizations/${matrix}/members`)).body.data.map((m: { userId: string }) => m.userId)).not.toContain(target.user.id);
        await lab.c.addMember(lab.owner, matrix, target.token, target.user.email, 'readonly');
      },
      ifRefused: async () => expect(await roleOfTarget()).toBe('readonly'),
    };
  },

  'GET /billing/balance': async (c) => {
    const reply = await as(c, 'GET', '/billing/balance', { scoped: true });
    return {
      reply,
      ifAllowed: async () => {
        // Matrix is on a paid plan and every Personal organization on hobby: this is Matrix's balance.
        expect(reply.body.plan).toBe(MATRIX_PLAN);
        expect(reply.body.subscription).toMatchObject({ status: 'active', cancelAtPeriodEnd: true });
        expect(typeof reply.body.secondsRemaining.devices).toBe('number');
        expect(typeof reply.body.secondsRemaining.instances).toBe('number');
      },
    };
  },

  'PUT /billing/plan': async (c) => {
    const reply = await as(c, 'PUT', '/billing/plan', { scoped: true, body: { plan: 'pro', cancelAtPeriodEnd: true } });
    return {
      reply,
      ifAllowed: async () => {
        expect(reply.body.plan).toBe('pro');
        expect(await matrixPlan()).toBe('pro');
        expect((await inMatrix('PUT', '/billing/plan', { plan: MATRIX_PLAN, cancelAtPeriodEnd: true })).status).toBe(200);
      },
      ifRefused: async () => expect(await matrixPlan()).toBe(MATRIX_PLAN),
    };
  },

  'GET /sessions': async (c) => {
    const reply = await as(c, 'GET', '/sessions?limit=500', { scoped: true });
    return {
      reply,
      ifAllowed: async () => {
        expect(ids(reply)).toContain(matrixSession);
        for (const x of reply.body.data) expect(x.organizationId).toBe(matrix);
      },
    };
  },

  'POST /sessions/{sessionId}/webdriver-runs/{runId}/takeover': async (c) => ({
    reply: await as(c, 'POST', `${s()}/webdriver-runs/00000000-0000-4000-8000-000000000000/takeover`, { scoped: true }),
  }),

  'POST /sessions': async (c) => {
    const before = await ownerSessionIds();
    const reply = await as(c, 'POST', '/sessions', { scoped: true });
    return {
      reply,
      ifAllowed: async () => {
        expect(reply.body).toMatchObject({ organizationId: matrix, createdBy: c.userId, devices: [], instances: [] });
        expect(await ownerSessionIds()).toContain(reply.body.id);
      },
      ifRefused: async () => expect(await ownerSessionIds()).toEqual(before),
    };
  },

  'GET /sessions/{sessionId}': async (c) => {
    const reply = await as(c, 'GET', s(), { scoped: true });
    return { reply, ifAllowed: async () => expect(reply.body).toMatchObject({ id: matrixSession, organizationId: matrix }) };
  },

  'GET /sessions/{sessionId}/devices': async (c) => {
    const reply = await as(c, 'GET', `${s()}/devices`, { scoped: true });
    return { reply, ifAllowed: async () => expect(ids(reply)).toContain(device) };
  },

  'GET /sessions/{sessionId}/webdriver-runs': async (c) => {
    const reply = await as(c, 'GET', `${s()}/webdriver-runs`, { scoped: true });
    return { reply, ifAllowed: async () => expect(reply.body).toEqual({ object: 'list', data: [] }) };
  },

  'POST /sessions/{sessionId}/devices': async (c) => {
    const before = (await sessionDevices()).map((d) => d.id);
    const reply = await as(c, 'POST', `${s()}/devices`, { scoped: true, body: { filters: [{ attribute: 'platform', operator: 'EQUALS', value: 'android' }] } });
    return {
      reply,
      ifAllowed: async () => {
        expect(reply.body).toMatchObject({ status: 'queued', releasedAt: null });
        expect((await sessionDevices()).map((d) => d.id)).toContain(reply.body.id);
        // Within the organization's device quota for the cells that follow.
        await release(reply.body.id);
      },
      ifRefused: async () => expect((await sessionDevices()).map((d) => d.id)).toEqual(before),
    };
  },

  'GET /sessions/{sessionId}/devices/{deviceId}': async (c) => {
    const reply = await as(c, 'GET', `${s()}/devices/${device}`, { scoped: true });
    return { reply, ifAllowed: async () => expect(reply.body).toMatchObject({ id: device, status: 'queued' }) };
  },

  'POST /sessions/{sessionId}/devices/{deviceId}/release': async (c) => {
    const victim = await queuedAllocation();
    const reply = await as(c, 'POST', `${s()}/devices/${victim}/release`, { scoped: true });
    const stateOf = async () => (await sessionDevices()).find((d) => d.id === victim)!;
    return {
      reply,
      ifAllowed: async () => {
        expect(reply.body.id).toBe(victim);
        expect((await stateOf()).releasedAt).not.toBeNull();
      },
      ifRefused: async () => {
        expect(await stateOf()).toMatchObject({ status: 'queued', releasedAt: null });
        await release(victim);
      },
    };
  },

  // The phone is unplugged, so Matrix's allocation of it is queued: driving it stops at device_not_in_use.
  'GET /sessions/{sessionId}/devices/{deviceId}/screenshot': async (c) => ({ reply: await as(c, 'GET', `${s()}/devices/${device}/screenshot`, { scoped: true }) }),
  'GET /sessions/{sessionId}/devices/{deviceId}/elements': async (c) => ({ reply: await as(c, 'GET', `${s()}/devices/${device}/elements`, { scoped: true }) }),
  'POST /sessions/{sessionId}/devices/{deviceId}/actions': async (c) => ({
    reply: await as(c, 'POST', `${s()}/devices/${device}/actions`, { scoped: true, body: { type: 'pressButton', button: 'HOME' } }),
  }),
  'POST /sessions/{sessionId}/devices/{deviceId}/install': async (c) => ({
    reply: await as(c, 'POST', `${s()}/devices/${device}/install`, { scoped: true, body: { file } }),
  }),
  'POST /sessions/{sessionId}/devices/{deviceId}/reboot': async (c) => ({ reply: await as(c, 'POST', `${s()}/devices/${device}/reboot`, { scoped: true }) }),
  'GET /sessions/{sessionId}/devices/{deviceId}/info': async (c) => ({ reply: await as(c, 'GET', `${s()}/devices/${device}/info`, { scoped: true }) }),
  'GET /sessions/{sessionId}/devices/{deviceId}/logs': async (c) => ({ reply: await as(c, 'GET', `${s()}/devices/${device}/logs`, { scoped: true }) }),
  'POST /sessions/{sessionId}/devices/{deviceId}/remote-connect': async (c) => ({ reply: await as(c, 'POST', `${s()}/devices/${device}/remote-connect`, { scoped: true }) }),
  'GET /sessions/{sessionId}/devices/{deviceId}/remote-connect': async (c) => ({ reply: await as(c, 'GET', `${s()}/devices/${device}/remote-connect`, { scoped: true }) }),
  'DELETE /sessions/{sessionId}/devices/{deviceId}/remote-connect': async (c) => ({ reply: await as(c, 'DELETE', `${s()}/devices/${device}/remote-connect`, { scoped: true }) }),
  'GET /adb-keys': async (c) => {
    const mine = await lab.c.call('POST', '/adb-keys', { token: c.token, body: { publicKey: newAdbPublicKey() } });
    const reply = await as(c, 'GET', '/adb-keys');
    return { reply, ifAllowed: async () => expect(ids(reply)).toContain(mine.body.id) };
  },
  'POST /adb-keys': async (c) => {
    const reply = await as(c, 'POST', '/adb-keys', { body: { publicKey: newAdbPublicKey(), title: `cell ${++seq}` } });
    return { reply, ifAllowed: async () => expect(ids(await lab.c.call('GET', '/adb-keys', { token: c.token }))).toContain(reply.body.id) };
  },
  'DELETE /adb-keys/{id}': async (c) => {
    const victim = await lab.c.call('POST', '/adb-keys', { token: c.token, body: { publicKey: newAdbPublicKey() } });
    expect(victim.status).toBe(201);
    const reply = await as(c, 'DELETE', `/adb-keys/${victim.body.id}`);
    return { reply, ifAllowed: async () => expect(ids(await lab.c.call('GET', '/adb-keys', { token: c.token }))).not.toContain(victim.body.id) };
  },
  'GET /sessions/{sessionId}/devices/{deviceId}/screenshot.png': async (c) => ({ reply: await as(c, 'GET', `${s()}/devices/${device}/screenshot.png`, { scoped: true }) }),
  'GET /sessions/{sessionId}/devices/{deviceId}/apps': async (c) => ({ reply: await as(c, 'GET', `${s()}/devices/${device}/apps`, { scoped: true }) }),
  'GET /sessions/{sessionId}/devices/{deviceId}/files/apps': async (c) => ({ reply: await as(c, 'GET', `${s()}/devices/${device}/files/apps`, { scoped: true }) }),
  'GET /sessions/{sessionId}/devices/{deviceId}/files': async (c) => ({ reply: await as(c, 'GET', `${s()}/devices/${device}/files?path=/sdcard`, { scoped: true }) }),
  'GET /sessions/{sessionId}/devices/{deviceId}/files/content': async (c) => ({ reply: await as(c, 'GET', `${s()}/devices/${device}/files/content?path=/sdcard/a.txt`, { scoped: true }) }),
  'DELETE /sessions/{sessionId}/devices/{deviceId}/files': async (c) => ({ reply: await as(c, 'DELETE', `${s()}/devices/${device}/files?path=/sdcard/a.txt`, { scoped: true }) }),
  'PUT /sessions/{sessionId}/devices/{deviceId}/files/content': async (c) => ({ reply: await as(c, 'PUT', `${s()}/devices/${device}/files/content?path=/sdcard/a.txt`, { scoped: true }) }),
  'POST /sessions/{sessionId}/devices/{deviceId}/recording': async (c) => ({ reply: await as(c, 'POST', `${s()}/devices/${device}/recording`, { scoped: true }) }),
  'POST /sessions/{sessionId}/devices/{deviceId}/recording/stop': async (c) => ({ reply: await as(c, 'POST', `${s()}/devices/${device}/recording/stop`, { scoped: true }) }),
  'GET /sessions/{sessionId}/devices/{deviceId}/shell': async (c) => ({ reply: await as(c, 'GET', `${s()}/devices/${device}/shell`, { scoped: true }) }),
  'PATCH /sessions/{sessionId}': async (c) => {
    const name = `renamed ${++seq}`;
    const reply = await as(c, 'PATCH', s(), { scoped: true, body: { name } });
    return {
      reply,
      ifAllowed: async () => expect((await lab.c.call('GET', s(), { token: lab.owner, org: matrix })).body.name).toBe(name),
      ifRefused: async () => expect((await lab.c.call('GET', s(), { token: lab.owner, org: matrix })).body.name).not.toBe(name),
    };
  },
  'POST /sessions/{sessionId}/end': async (c) => {
    // A session of its own, so that ending it leaves the matrix session open for the other cells.
    const own = (await lab.c.call('POST', '/sessions', { token: lab.owner, org: matrix })).body.id as string;
    const reply = await as(c, 'POST', `/sessions/${own}/end`, { scoped: true });
    const endedAt = async () => (await lab.c.call('GET', `/sessions/${own}`, { token: lab.owner, org: matrix })).body.endedAt;
    return { reply, ifAllowed: async () => expect(await endedAt()).toBeTruthy(), ifRefused: async () => expect(await endedAt()).toBeFalsy() };
  },
  'GET /ws': async (c) => {
    // An allowed caller gets the socket and a JSON-RPC answer; a refused one an HTTP error before the upgrade.
    const { ws, refusal } = connectWs(`${lab.t.api.replace(/^http/, 'ws').replace(/\/api\/v1$/, '')}/ws`, { headers: headersOf(c) });
    ws.on('error', () => undefined);
    const opened = new Promise<Reply>((resolve) =>
      ws.once('open', () => {
        ws.send(JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'devices.list', params: {} }));
        ws.once('message', (data) => {
          ws.close();
          resolve({ status: 200, body: JSON.parse(String(data)), headers: new Headers() });
        });
      }),
    );
    const reply = await Promise.race([opened, refusal.then((r) => ({ ...r, headers: new Headers() }))]);
    return { reply, ifAllowed: async () => expect(reply.body).toMatchObject({ jsonrpc: '2.0', id: 1, result: expect.anything() }) };
  },
  'GET /sessions/{sessionId}/devices/{deviceId}/screen': async (c) => {
    const refusal = await refusedUpgrade(`${lab.t.api.replace(/^http/, 'ws')}${s()}/devices/${device}/screen`, { headers: headersOf(c) });
    return { reply: { status: refusal.status, body: refusal.body, headers: refusal.headers } };
  },

  'POST /sessions/{sessionId}/devices/{deviceId}/keep': async (c) => {
    const reply = await as(c, 'POST', `${s()}/devices/${device}/keep`, { scoped: true });
    return { reply, ifAllowed: async () => expect(reply.body).toMatchObject({ id: device, status: 'queued' }) };
  },

  'POST /reservations': async (c) => {
    // Each cell books its own hour of the one phone, so that no two overlap.
    const startsAt = new Date(Date.now() + ++seq * 2 * 3600_000).toISOString();
    const endsAt = new Date(Date.parse(startsAt) + 3600_000).toISOString();
    const reply = await as(c, 'POST', '/reservations', { scoped: true, body: { filters: [{ attribute: 'platform', operator: 'EQUALS', value: 'android' }], startsAt, endsAt, title: `cell ${seq}` } });
    const booked = async () => (await inMatrix('GET', `/reservations?from=${encodeURIComponent(startsAt)}&to=${encodeURIComponent(endsAt)}`)).body.data as Array<{ id: string }>;
    return {
      reply,
      ifAllowed: async () => {
        expect(reply.body).toMatchObject({ serial: PHONE, startsAt, endsAt, createdBy: c.userId });
        expect((await booked()).map((r) => r.id)).toEqual([reply.body.id]);
        expect((await inMatrix('DELETE', `/reservations/${reply.body.id}`)).status).toBe(204);
      },
      ifRefused: async () => expect(await booked()).toEqual([]),
    };
  },

  'GET /reservations': async (c) => {
    const reply = await as(c, 'GET', '/reservations', { scoped: true });
    return { reply, ifAllowed: async () => expect(reply.body.object).toBe('list') };
  },

  'DELETE /reservations/{id}': async (c) => {
    const startsAt = new Date(Date.now() + ++seq * 2 * 3600_000).toISOString();
    const endsAt = new Date(Date.parse(startsAt) + 3600_000).toISOString();
    const victim = await inMatrix('POST', '/reservations', { filters: [{ attribute: 'platform', operator: 'EQUALS', value: 'android' }], startsAt, endsAt });
    expect(victim.status).toBe(201);
    const reply = await as(c, 'DELETE', `/reservations/${victim.body.id}`, { scoped: true });
    const ids = async () => (await inMatrix('GET', `/reservations?from=${encodeURIComponent(startsAt)}&to=${encodeURIComponent(endsAt)}`)).body.data.map((r: { id: string }) => r.id);
    return {
      reply,
      ifAllowed: async () => expect(await ids()).toEqual([]),
      ifRefused: async () => {
        expect(await ids()).toEqual([victim.body.id]);
        expect((await inMatrix('DELETE', `/reservations/${victim.body.id}`)).status).toBe(204);
      },
    };
  },

  'GET /usage': async (c) => {
    const reply = await as(c, 'GET', '/usage?groupBy=device', { scoped: true });
    return { reply, ifAllowed: async () => expect(reply.body).toMatchObject({ groupBy: 'device', data: [] }) };
  },

  'GET /fleet/devices': async (c) => {
    const reply = await as(c, 'GET', '/fleet/devices', { scoped: true });
    return {
      reply,
      ifAllowed: async () => {
        const phone = reply.body.data.find((d: { id?: string; serial?: string }) => (d.serial ?? d.id) === PHONE);
        expect(phone).toMatchObject({ platform: 'android' });
      },
    };
  },

  'PATCH /fleet/devices/{serial}': async (c) => {
    const noteOf = async () => (await owner('GET', '/fleet/devices')).body.data.find((d: { serial: string }) => d.serial === PHONE)?.note;
    const before = await noteOf();
    const reply = await as(c, 'PATCH', `/fleet/devices/${PHONE}`, { body: { note: 'shelf M' } });
    return { reply, ifRefused: async () => expect(await noteOf()).toBe(before) };
  },

  'GET /fleet/hosts': async (c) => {
    const reply = await as(c, 'GET', '/fleet/hosts', { scoped: true });
    return { reply, ifAllowed: async () => expect(reply.body).toEqual({ object: 'list', data: [] }) };
  },

  'GET /fleet/providers': async (c) => {
    const reply = await as(c, 'GET', '/fleet/providers', { scoped: true });
    return { reply, ifAllowed: async () => expect(reply.body).toEqual({ object: 'list', data: [] }) };
  },

  'GET /sessions/{sessionId}/instances': async (c) => {
    const reply = await as(c, 'GET', `${s()}/instances`, { scoped: true });
    return { reply, ifAllowed: async () => expect(reply.body).toEqual({ object: 'list', data: [] }) };
  },

  'POST /sessions/{sessionId}/instances': async (c) => {
    const reply = await as(c, 'POST', `${s()}/instances`, { scoped: true, body: { os: 'macos' } });
    // Allowed or not, no instance exists: the lab has no Mac host.
    const none = async () => expect((await inMatrix('GET', `${s()}/instances`)).body.data).toEqual([]);
    return { reply, ifAllowed: none, ifRefused: none };
  },

  'GET /sessions/{sessionId}/instances/{instanceId}': async (c) => ({ reply: await as(c, 'GET', `${s()}/instances/${UNKNOWN}`, { scoped: true }) }),
  'POST /sessions/{sessionId}/instances/{instanceId}/release': async (c) => ({ reply: await as(c, 'POST', `${s()}/instances/${UNKNOWN}/release`, { scoped: true }) }),
  'POST /sessions/{sessionId}/instances/{instanceId}/exec': async (c) => ({
    reply: await as(c, 'POST', `${s()}/instances/${UNKNOWN}/exec`, { scoped: true, body: { command: 'true' } }),
  }),
  'GET /sessions/{sessionId}/instances/{instanceId}/terminal': async (c) => {
    const refusal = await refusedUpgrade(`${lab.t.api.replace(/^http/, 'ws')}${s()}/instances/${UNKNOWN}/terminal`, { headers: headersOf(c) });
    return { reply: { status: refusal.status, body: refusal.body, headers: refusal.headers } };
  },

  'GET /sessions/{sessionId}/chats': async (c) => {
    const reply = await as(c, 'GET', `${s()}/chats`, { scoped: true });
    return { reply, ifAllowed: async () => expect(ids(reply)).toContain(chat) };
  },

  'POST /sessions/{sessionId}/chats': async (c) => {
    const title = `chat ${++seq}`;
    const reply = await as(c, 'POST', `${s()}/chats`, { scoped: true, body: { title } });
    const titles = async () => (await inMatrix('GET', `${s()}/chats`)).body.data.map((x: { title: string }) => x.title);
    return {
      reply,
      ifAllowed: async () => {
        expect(reply.body).toMatchObject({ title, sessionId: matrixSession });
        expect(await titles()).toContain(title);
      },
      ifRefused: async () => expect(await titles()).not.toContain(title),
    };
  },

  'GET /sessions/{sessionId}/chats/{chatId}': async (c) => {
    const reply = await as(c, 'GET', `${s()}/chats/${chat}`, { scoped: true });
    return { reply, ifAllowed: async () => expect(reply.body).toMatchObject({ id: chat, sessionId: matrixSession }) };
  },

  'GET /sessions/{sessionId}/chats/{chatId}/messages': async (c) => {
    const reply = await as(c, 'GET', `${s()}/chats/${chat}/messages`, { scoped: true });
    return { reply, ifAllowed: async () => expect(ids(reply)).toEqual(expect.arrayContaining([userMessage, answer])) };
  },

  'POST /sessions/{sessionId}/chats/{chatId}/messages': async (c) => {
    const text = `stored ${++seq}`;
    // execute=false stores the user message and runs nothing.
    const reply = await as(c, 'POST', `${s()}/chats/${chat}/messages`, { scoped: true, body: { text, execute: false } });
    return {
      reply,
      ifAllowed: async () => {
        expect(reply.body).toMatchObject({ role: 'user', text, status: 'completed' });
        expect((await chatMessages()).map((x) => x.id)).toContain(reply.body.id);
      },
      ifRefused: async () => expect((await chatMessages()).map((x) => x.text)).not.toContain(text),
    };
  },

  'GET /sessions/{sessionId}/chats/{chatId}/messages/{messageId}': async (c) => {
    const reply = await as(c, 'GET', m(answer), { scoped: true });
    return { reply, ifAllowed: async () => expect(reply.body).toMatchObject({ id: answer, role: 'assistant', status: 'completed' }) };
  },

  'GET /sessions/{sessionId}/chats/{chatId}/messages/{messageId}/events': async (c) => {
    const res = await fetch(`${lab.t.api}${m(answer)}/events`, { headers: headersOf(c) });
    if (res.status !== 200) return { reply: { status: res.status, body: await res.json(), headers: res.headers } };
    // A finished execution replays its final state and ends.
    const { events } = await readEvents(res, (e) => e.event === 'execution.completed' || e.event === 'execution.failed');
    return {
      reply: { status: res.status, body: undefined, headers: res.headers },
      ifAllowed: async () => {
        expect(res.headers.get('content-type')).toMatch(/^text\/event-stream/);
        expect(events.at(-1)).toMatchObject({ event: 'execution.completed' });
      },
    };
  },

  'GET /sessions/{sessionId}/chats/{chatId}/messages/{messageId}/tool-calls': async (c) => {
    const reply = await as(c, 'GET', `${m(answer)}/tool-calls`, { scoped: true });
    return { reply, ifAllowed: async () => expect(ids(reply)).toEqual([toolCall]) };
  },

  // The screenshot tool call found no phone, so it has no image: an allowed caller gets as far as that.
  'GET /sessions/{sessionId}/chats/{chatId}/messages/{messageId}/tool-calls/{toolCallId}/image': async (c) => ({
    reply: await as(c, 'GET', `${m(answer)}/tool-calls/${toolCall}/image`, { scoped: true }),
  }),

  'POST /sessions/{sessionId}/chats/{chatId}/messages/{messageId}/cancel': async (c) => {
    const reply = await as(c, 'POST', `${m(answer)}/cancel`, { scoped: true });
    // A finished message stays as it was: cancelling it is answered with it.
    return { reply, ifAllowed: async () => expect(reply.body).toMatchObject({ id: answer, status: 'completed' }) };
  },

  'GET /test-results': async (c) => {
    const reply = await as(c, 'GET', '/test-results?limit=500', { scoped: true });
    return {
      reply,
      ifAllowed: async () => {
        expect(ids(reply)).toContain(testResult);
        for (const x of reply.body.data) expect(x.organizationId).toBe(matrix);
      },
    };
  },

  'POST /test-results': async (c) => {
    const name = `run ${++seq}`;
    const reply = await as(c, 'POST', '/test-results', { scoped: true, body: { name } });
    const names = async () => (await inMatrix('GET', '/test-results?limit=500')).body.data.map((x: { name: string }) => x.name);
    return {
      reply,
      ifAllowed: async () => {
        expect(reply.body).toMatchObject({ name, organizationId: matrix, status: 'queued' });
        expect(await names()).toContain(name);
      },
      ifRefused: async () => expect(await names()).not.toContain(name),
    };
  },

  'GET /test-results/{testResultId}': async (c) => {
    const reply = await as(c, 'GET', `/test-results/${testResult}`, { scoped: true });
    return { reply, ifAllowed: async () => expect(reply.body).toMatchObject({ id: testResult, organizationId: matrix }) };
  },

  'PATCH /test-results/{testResultId}': async (c) => {
    const name = `renamed run ${++seq}`;
    const reply = await as(c, 'PATCH', `/test-results/${testResult}`, { scoped: true, body: { name } });
    return {
      reply,
      ifAllowed: async () => {
        expect(reply.body).toMatchObject({ id: testResult, name });
        expect((await ownerTestResult()).name).toBe(name);
      },
      ifRefused: async () => expect((await ownerTestResult()).name).not.toBe(name),
    };
  },

  'GET /test-results/{testResultId}/assets': async (c) => {
    const reply = await as(c, 'GET', `/test-results/${testResult}/assets`, { scoped: true });
    return { reply, ifAllowed: async () => expect(ids(reply)).toContain(asset) };
  },

  'POST /test-results/{testResultId}/assets': async (c) => {
    const name = `log-${++seq}.txt`;
    const form = new FormData();
    form.append('name', name);
    form.append('file', new Blob(['cell log']), name);
    const reply = await postForm(c, `/test-results/${testResult}/assets`, form);
    return {
      reply,
      ifAllowed: async () => {
        expect(reply.body).toMatchObject({ name, size: 8 });
        expect(await assetNames()).toContain(name);
      },
      ifRefused: async () => expect(await assetNames()).not.toContain(name),
    };
  },

  'GET /test-results/{testResultId}/assets/{assetId}': async (c) => {
    const res = await fetch(`${lab.t.api}/test-results/${testResult}/assets/${asset}`, { headers: headersOf(c) });
    const text = await res.text();
    const reply = { status: res.status, body: res.status === 200 ? text : JSON.parse(text), headers: res.headers };
    return { reply, ifAllowed: async () => expect(text).toBe(ASSET_CONTENT) };
  },

  'GET /files': async (c) => {
    const reply = await as(c, 'GET', '/files?limit=500', { scoped: true });
    return { reply, ifAllowed: async () => expect(ids(reply)).toContain(file) };
  },

  'POST /files': async (c) => {
    const bytes = Buffer.from(`declared ${++seq}`);
    const filename = `declared-${seq}.apk`;
    const reply = await as(c, 'POST', '/files', { scoped: true, body: { filename, filesize: bytes.length, sha256: sha256(bytes) } });
    const names = async () => (await inMatrix('GET', '/files?limit=500')).body.data.map((f: { filename: string }) => f.filename);
    return {
      reply,
      ifAllowed: async () => {
        expect(reply.body).toMatchObject({ filename, status: 'pendingUpload' });
        expect(await ownerFileIds()).toContain(reply.body.id);
      },
      ifRefused: async () => expect(await names()).not.toContain(filename),
    };
  },

  'POST /files/upload': async (c) => {
    const apk = buildApk({ packageName: `com.example.upload${++seq}`, label: `Upload ${seq}`, versionCode: seq });
    const filename = `upload-${seq}.apk`;
    const form = new FormData();
    form.append('file', new Blob([new Uint8Array(apk)]), filename);
    const reply = await postForm(c, '/files/upload', form);
    const names = async () => (await inMatrix('GET', '/files?limit=500')).body.data.map((f: { filename: string }) => f.filename);
    return {
      reply,
      ifAllowed: async () => {
        expect(reply.body).toMatchObject({ filename, sha256: sha256(apk) });
        expect(await ownerFileIds()).toContain(reply.body.id);
      },
      ifRefused: async () => expect(await names()).not.toContain(filename),
    };
  },

  'GET /files/{fileId}': async (c) => {
    const reply = await as(c, 'GET', `/files/${file}`, { scoped: true });
    return { reply, ifAllowed: async () => expect(reply.body).toMatchObject({ id: file, status: 'ready' }) };
  },

  'DELETE /files/{fileId}': async (c) => {
    const bytes = Buffer.from(`victim ${++seq}`);
    const victim = await inMatrix('POST', '/files', { filename: `victim-${seq}.apk`, filesize: bytes.length, sha256: sha256(bytes) });
    expect(victim.status).toBe(201);
    const reply = await as(c, 'DELETE', `/files/${victim.body.id}`, { scoped: true });
    return {
      reply,
      ifAllowed: async () => expect((await inMatrix('GET', `/files/${victim.body.id}`)).status).toBe(404),
      ifRefused: async () => expect((await inMatrix('GET', `/files/${victim.body.id}`)).status).toBe(200),
    };
  },

  'POST /files/{fileId}/complete': async (c) => {
    const uploaded = await uploadedFile();
    const reply = await as(c, 'POST', `/files/${uploaded}/complete`, { scoped: true });
    return {
      reply,
      ifAllowed: async () => {
        expect(reply.body.id).toBe(uploaded);
        expect(['processing', 'ready']).toContain(await fileStatus(uploaded));
      },
      ifRefused: async () => expect(await fileStatus(uploaded)).toBe('pendingUpload'),
    };
  },

  'GET /apps': async (c) => {
    const reply = await as(c, 'GET', '/apps', { scoped: true });
    return { reply, ifAllowed: async () => expect(ids(reply)).toContain(app) };
  },

  'GET /apps/{appId}': async (c) => {
    const reply = await as(c, 'GET', `/apps/${app}`, { scoped: true });
    return {
      reply,
      ifAllowed: async () => {
        expect(reply.body.id).toBe(app);
        expect(JSON.stringify(reply.body)).toContain(file);
      },
    };
  },

  'GET /lab/settings': async (c) => ({ reply: await as(c, 'GET', '/lab/settings') }),
  'PATCH /lab/settings': async (c) => {
    const before = await labSettings();
    const reply = await as(c, 'PATCH', '/lab/settings', { body: { signupOpen: !before.signupOpen } });
    return { reply, ifRefused: async () => expect(await labSettings()).toEqual(before) };
  },
  'GET /lab/assistant': async (c) => ({ reply: await as(c, 'GET', '/lab/assistant') }),
  'PUT /lab/assistant': async (c) => {
    const before = await assistantConfig();
    const reply = await as(c, 'PUT', '/lab/assistant', { body: { provider: 'openai', endpoint: 'http://127.0.0.1:9/v1', model: 'stolen', apiKey: 'sk-x' } });
    return { reply, ifRefused: async () => expect(await assistantConfig()).toEqual(before) };
  },
  'PATCH /lab/assistant': async (c) => {
    const before = await assistantConfig();
    const reply = await as(c, 'PATCH', '/lab/assistant', { body: { model: 'stolen' } });
    return { reply, ifRefused: async () => expect(await assistantConfig()).toEqual(before) };
  },
  'GET /lab/hosts': async (c) => ({ reply: await as(c, 'GET', '/lab/hosts') }),
  'POST /lab/hosts': async (c) => {
    const reply = await as(c, 'POST', '/lab/hosts', { body: { name: `mac-${++seq}`, address: '127.0.0.1', username: 'admin', password: 'pw', mode: 'bare', baseImage: 'macOS 15' } });
    return { reply, ifRefused: async () => expect(await labHosts()).toEqual([]) };
  },
  'GET /lab/hosts/{hostId}': async (c) => ({ reply: await as(c, 'GET', `/lab/hosts/${UNKNOWN}`) }),
  'PATCH /lab/hosts/{hostId}': async (c) => ({ reply: await as(c, 'PATCH', `/lab/hosts/${UNKNOWN}`, { body: { name: 'renamed' } }) }),
  'DELETE /lab/hosts/{hostId}': async (c) => ({ reply: await as(c, 'DELETE', `/lab/hosts/${UNKNOWN}`) }),
  'GET /lab/providers': async (c) => ({ reply: await as(c, 'GET', '/lab/providers') }),
  'POST /lab/providers': async (c) => {
    const reply = await as(c, 'POST', '/lab/providers', { body: { name: `provider-${++seq}`, address: '127.0.0.1', port: 9, username: 'lab', password: 'pw' } });
    return { reply, ifRefused: async () => expect(ids(await owner('GET', '/lab/providers'))).toEqual([]) };
  },
  'POST /lab/providers/host-key': async (c) => ({ reply: await as(c, 'POST', '/lab/providers/host-key', { body: { address: '127.0.0.1', port: 9 } }) }),
  'GET /lab/usage': async (c) => ({ reply: await as(c, 'GET', '/lab/usage') }),
  'GET /lab/providers/{providerId}': async (c) => ({ reply: await as(c, 'GET', `/lab/providers/${UNKNOWN}`) }),
  'PATCH /lab/providers/{providerId}': async (c) => ({ reply: await as(c, 'PATCH', `/lab/providers/${UNKNOWN}`, { body: { paused: true } }) }),
  'DELETE /lab/providers/{providerId}': async (c) => ({ reply: await as(c, 'DELETE', `/lab/providers/${UNKNOWN}`) }),
  'GET /metrics': async (c) => ({ reply: await as(c, 'GET', '/metrics') }),
  'POST /lab/backup': async (c) => ({ reply: await as(c, 'POST', '/lab/backup') }),
};

const show = (e: Expect) => (typeof e === 'number' ? String(e) : `${e[0]} ${e[1]}`);

beforeAll(async () => {
  // The assistant answers Matrix's one executed message with a screenshot tool call (there is no phone), then text.
  model = await startScriptedModel('openai', (_body, i) => (i === 0 ? { toolCalls: [{ name: 'screenshot', arguments: {} }] } : { text: ['Done'] }));
  expect((await owner('PUT', '/lab/assistant', { body: { provider: 'openai', endpoint: model.endpoint, model: 'scripted-1', apiKey: 'sk-test' } })).status).toBe(200);

  matrix = await lab.c.createOrganization(lab.owner, 'Matrix');
  for (const role of ROLES) {
    const email = `${role}@lab.test`;
    const account = await lab.c.signup(email);
    if (role !== 'non-member') await lab.c.addMember(lab.owner, matrix, account.token, email, role);
    // A member's key is bound to Matrix; the non-member's to their own Personal organization.
    const key = await lab.c.createKey(account.token, role === 'non-member' ? undefined : matrix, `${role} key`);
    const base = { role, token: account.token, userId: account.user.id, email };
    (callers.interactive ??= {} as Record<Role, Caller>)[role] = { ...base, kind: 'interactive', bearer: account.token, org: matrix };
    (callers.key ??= {} as Record<Role, Caller>)[role] = { ...base, kind: 'key', bearer: key, org: role === 'non-member' ? matrix : undefined };
  }
  target = await lab.c.signup('target@lab.test');
  await lab.c.addMember(lab.owner, matrix, target.token, 'target@lab.test', 'readonly');

  const session = await inMatrix('POST', '/sessions');
  expect(session.status).toBe(201);
  matrixSession = session.body.id;
  const inv = await owner('POST', `/organizations/${matrix}/invitations`, { body: { email: 'pending@lab.test', role: 'readonly' } });
  expect(inv.status).toBe(201);
  matrixInvitation = inv.body.id;
  expect((await inMatrix('PUT', '/billing/plan', { plan: MATRIX_PLAN, cancelAtPeriodEnd: true })).status).toBe(200);

  // A phone the lab has seen and that is unplugged now: allocations of it queue.
  lab.t.engine.stores.fleet.upsert({ serial: PHONE, platform: 'android', type: 'real', name: 'Pixel Matrix', osVersion: '14', state: 'offline', battery: null }, Date.now());
  device = await queuedAllocation();

  const created = await inMatrix('POST', `${s()}/chats`, { title: 'matrix chat' });
  expect(created.status).toBe(201);
  chat = created.body.id;
  const stored = await inMatrix('POST', `${s()}/chats/${chat}/messages`, { text: 'stored', execute: false });
  expect(stored.status).toBe(201);
  userMessage = stored.body.id;
  const ran = await inMatrix('POST', `${s()}/chats/${chat}/messages`, { text: 'take a screenshot', mode: 'sync' });
  expect(ran.status, JSON.stringify(ran.body)).toBe(201);
  expect(ran.body.status).toBe('completed');
  answer = ran.body.id;
  const calls = await inMatrix('GET', `${m(answer)}/tool-calls`);
  expect(calls.body.data).toHaveLength(1);
  toolCall = calls.body.data[0].id;

  const run = await inMatrix('POST', '/test-results', { name: 'matrix run' });
  expect(run.status).toBe(201);
  testResult = run.body.id;
  const form = new FormData();
  form.append('name', 'matrix.txt');
  form.append('file', new Blob([ASSET_CONTENT]), 'matrix.txt');
  const uploaded = await fetch(`${lab.t.api}/test-results/${testResult}/assets`, { method: 'POST', headers: { authorization: `Bearer ${lab.owner}`, 'x-organization-id': matrix }, body: form });
  expect(uploaded.status).toBe(201);
  asset = ((await uploaded.json()) as { id: string }).id;

  file = await uploadedFile();
  expect((await inMatrix('POST', `/files/${file}/complete`)).status).toBe(200);
  app = await waitFor('the Matrix app to be ready', async () => {
    const r = await inMatrix('GET', `/files/${file}`);
    return r.body.status === 'ready' && (r.body.appId as string);
  });
});
afterAll(() => model?.stop());

describe('authorization matrix', () => {
  it('has a line for every operation that takes credentials, and only those', async () => {
    const doc = (await lab.c.call('GET', '/openapi.json')).body;
    const secured = Object.entries<Record<string, { security?: unknown }>>(doc.paths).flatMap(([path, ops]) =>
      Object.entries(ops).filter(([, op]) => op.security).map(([method]) => `${method.toUpperCase()} ${path.replace(/^\/api\/v1/, '')}`),
    );
    expect(Object.keys(MATRIX).sort()).toEqual(secured.sort());
  });

  for (const op of Object.keys(MATRIX) as Op[]) {
    for (const kind of KINDS) {
      ROLES.forEach((role, i) => {
        const expected: Expect = MATRIX[op][kind][i]!;
        it(`${op} · ${kind} ${role} → ${show(expected)}`, async () => {
          const attempt = await OPERATIONS[op](callers[kind][role]);
          const { reply } = attempt;
          if (typeof expected === 'number') {
            expect(reply.status, JSON.stringify(reply.body)).toBe(expected);
            await attempt.ifAllowed?.();
          } else {
            expect([reply.status, errorCode(reply)]).toEqual(expected);
            await attempt.ifRefused?.();
          }
        });
      });
    }
  }
});

describe('role changes', () => {
  it('a sole admin deletes their own fresh organization (204), which then is gone', async () => {
    const admin = callers.interactive.admin;
    const fresh = await lab.c.createOrganization(admin.bearer, `Fresh ${++seq}`);
    const r = await as(admin, 'DELETE', `/organizations/${fresh}`);
    expect(r.status, JSON.stringify(r.body)).toBe(204);
    const after = await as(admin, 'GET', `/organizations/${fresh}/members`);
    expect([after.status, errorCode(after)]).toEqual([404, 'organization_not_found']);
  });

  it('nobody can change their own role, with a token or a key (403 own_role)', async () => {
    for (const c of [callers.interactive.admin, callers.key.admin]) {
      const r = await as(c, 'PATCH', `/organizations/${matrix}/members/${c.userId}`, { body: { role: 'readonly' } });
      expect([r.status, errorCode(r)]).toEqual([403, 'own_role']);
    }
    const me = (await owner('GET', '/me')).body.id as string;
    const r = await owner('PATCH', `/organizations/${matrix}/members/${me}`, { body: { role: 'readwrite' } });
    expect([r.status, errorCode(r)]).toEqual([403, 'own_role']);
    const members = await owner('GET', `/organizations/${matrix}/members`);
    expect(members.body.data).toContainEqual(expect.objectContaining({ userId: me, role: 'admin' }));
    expect(members.body.data).toContainEqual(expect.objectContaining({ userId: callers.interactive.admin.userId, role: 'admin' }));
  });

  it('a demotion from admin to readonly applies on the very next request, by token and by key', async () => {
    const email = `demoted-${++seq}@lab.test`;
    const account = await lab.c.signup(email);
    await lab.c.addMember(lab.owner, matrix, account.token, email, 'admin');
    const key = await lab.c.createKey(account.token, matrix, 'demoted key');
    const token: Caller = { kind: 'interactive', role: 'admin', bearer: account.token, token: account.token, userId: account.user.id, email, org: matrix };
    const apiKey: Caller = { ...token, kind: 'key', bearer: key, org: undefined };

    for (const c of [token, apiKey]) {
      expect((await as(c, 'GET', `/organizations/${matrix}/invitations`)).status).toBe(200);
      expect((await as(c, 'POST', '/sessions', { scoped: true })).status).toBe(201);
    }

    const demote = await owner('PATCH', `/organizations/${matrix}/members/${account.user.id}`, { body: { role: 'readonly' } });
    expect(demote.status).toBe(200);
    expect(demote.body).toMatchObject({ userId: account.user.id, role: 'readonly' });

    for (const c of [token, apiKey]) {
      const admin = await as(c, 'GET', `/organizations/${matrix}/invitations`);
      expect([admin.status, errorCode(admin)]).toEqual([403, 'insufficient_role']);
      const write = await as(c, 'POST', '/sessions', { scoped: true });
      expect([write.status, errorCode(write)]).toEqual([403, 'insufficient_role']);
      // Still a member: reading goes on.
      expect((await as(c, 'GET', '/sessions', { scoped: true })).status).toBe(200);
    }
    const orgs = await as(token, 'GET', '/organizations');
    expect(orgs.body.data).toContainEqual(expect.objectContaining({ id: matrix, role: 'readonly' }));
  });

  it('a promotion from readonly to readwrite applies on the very next request, by token and by key', async () => {
    const email = `promoted-${++seq}@lab.test`;
    const account = await lab.c.signup(email);
    await lab.c.addMember(lab.owner, matrix, account.token, email, 'readonly');
    const key = await lab.c.createKey(account.token, matrix, 'promoted key');
    const token: Caller = { kind: 'interactive', role: 'readonly', bearer: account.token, token: account.token, userId: account.user.id, email, org: matrix };
    const apiKey: Caller = { ...token, kind: 'key', bearer: key, org: undefined };

    for (const c of [token, apiKey]) {
      const r = await as(c, 'POST', '/sessions', { scoped: true });
      expect([r.status, errorCode(r)]).toEqual([403, 'insufficient_role']);
    }
    const promote = await owner('PATCH', `/organizations/${matrix}/members/${account.user.id}`, { body: { role: 'readwrite' } });
    expect(promote.status).toBe(200);
    for (const c of [token, apiKey]) {
      const r = await as(c, 'POST', '/sessions', { scoped: true });
      expect(r.status, JSON.stringify(r.body)).toBe(201);
      expect(r.body).toMatchObject({ organizationId: matrix, createdBy: account.user.id });
    }
  });
});
