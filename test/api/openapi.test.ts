import { beforeAll, describe, expect, it } from 'vitest';
import { useEngine } from '../support/engine.js';

let doc: any;

const lab = useEngine();

beforeAll(async () => {
  const r = await lab.c.call('GET', '/openapi.json');
  expect(r.status).toBe(200);
  doc = r.body;
});

/** SPEC.md's operations so far: method, path, tag, and the statuses the spec declares (success first). */
const SPEC_OPERATIONS: Array<[string, string, string, number[]]> = [
  ['get', '/api/v1/me', 'Account', [200, 401]],
  ['delete', '/api/v1/me', 'Account', [204, 401, 403, 409]],
  ['get', '/api/v1/keys', 'API Keys', [200, 401, 403]],
  ['post', '/api/v1/keys', 'API Keys', [201, 400, 401, 403]],
  ['delete', '/api/v1/keys/{id}', 'API Keys', [204, 401, 403, 404]],
  ['get', '/api/v1/invitations', 'Invitations', [200, 401, 403, 500]],
  ['post', '/api/v1/invitations/{invitationId}/accept', 'Invitations', [204, 401, 403, 404]],
  ['post', '/api/v1/invitations/{invitationId}/reject', 'Invitations', [204, 401, 403, 404]],
  ['get', '/api/v1/organizations/{id}/invitations', 'Invitations', [200, 401, 403, 404]],
  ['post', '/api/v1/organizations/{id}/invitations', 'Invitations', [201, 400, 401, 403, 404, 409]],
  ['delete', '/api/v1/organizations/{id}/invitations/{invitationId}', 'Invitations', [204, 401, 403, 404]],
  ['get', '/api/v1/organizations', 'Organizations', [200, 401, 403, 500]],
  ['post', '/api/v1/organizations', 'Organizations', [201, 400, 401, 409]],
  ['patch', '/api/v1/organizations/{id}', 'Organizations', [200, 400, 401, 403, 409]],
  ['delete', '/api/v1/organizations/{id}', 'Organizations', [204, 401, 403, 409]],
  ['get', '/api/v1/organizations/{id}/members', 'Members', [200, 401, 403, 404, 500]],
  // the spec shows neither the response nor the statuses of a role change
  ['patch', '/api/v1/organizations/{id}/members/{userId}', 'Members', [200, 400, 401, 403, 404]],
  ['get', '/api/v1/billing/balance', 'Billing', [200, 401, 403]],
  ['get', '/api/v1/sessions', 'Sessions', [200, 400, 401, 403]],
  ['post', '/api/v1/sessions', 'Sessions', [201, 401, 403]],
  ['get', '/api/v1/sessions/{sessionId}', 'Sessions', [200, 401, 403, 404]],
  ['get', '/api/v1/sessions/{sessionId}/devices', 'Devices', [200, 401, 403, 404]],
  ['post', '/api/v1/sessions/{sessionId}/devices', 'Devices', [201, 400, 401, 403, 404, 409]],
  ['get', '/api/v1/sessions/{sessionId}/devices/{deviceId}', 'Devices', [200, 401, 403, 404]],
  ['post', '/api/v1/sessions/{sessionId}/devices/{deviceId}/release', 'Devices', [202, 401, 403, 404]],
  ['get', '/api/v1/sessions/{sessionId}/instances', 'Instances', [200, 401, 403, 404]],
  ['post', '/api/v1/sessions/{sessionId}/instances', 'Instances', [201, 400, 401, 403, 404, 409]],
  ['get', '/api/v1/sessions/{sessionId}/instances/{instanceId}', 'Instances', [200, 401, 403, 404]],
  ['post', '/api/v1/sessions/{sessionId}/instances/{instanceId}/release', 'Instances', [202, 401, 403, 404]],
  ['get', '/api/v1/test-results', 'Test Results', [200, 401]],
  ['post', '/api/v1/test-results', 'Test Results', [201, 400, 401]],
  ['get', '/api/v1/test-results/{testResultId}', 'Test Results', [200, 401, 404]],
  ['patch', '/api/v1/test-results/{testResultId}', 'Test Results', [200, 400, 401, 404]],
  ['get', '/api/v1/test-results/{testResultId}/assets', 'Test Results', [200, 401, 404]],
  ['post', '/api/v1/test-results/{testResultId}/assets', 'Test Results', [201, 401, 404]],
  // 206 only answers a Range request, which a client must send to see it: declared because it is served
  ['get', '/api/v1/test-results/{testResultId}/assets/{assetId}', 'Test Results', [200, 206, 401, 404]],
  // Files and Apps are preview; the spec shows none of their statuses
  ['get', '/api/v1/files', 'Files', [200, 400, 401, 403]],
  ['post', '/api/v1/files', 'Files', [200, 201, 400, 401, 403]],
  ['post', '/api/v1/files/upload', 'Files', [200, 201, 400, 401, 403]],
  ['get', '/api/v1/files/{fileId}', 'Files', [200, 401, 403, 404]],
  ['delete', '/api/v1/files/{fileId}', 'Files', [204, 401, 403, 404]],
  ['post', '/api/v1/files/{fileId}/complete', 'Files', [200, 401, 403, 404, 409]],
  ['put', '/api/v1/files/{fileId}/content', 'Files', [200, 400, 403, 404]],
  ['get', '/api/v1/apps', 'Apps', [200, 400, 401, 403]],
  ['get', '/api/v1/apps/{appId}', 'Apps', [200, 401, 403, 404]],
  ['get', '/api/v1/sessions/{sessionId}/chats', 'Chats', [200, 401, 403, 404]],
  ['post', '/api/v1/sessions/{sessionId}/chats', 'Chats', [201, 400, 401, 403, 404]],
  ['get', '/api/v1/sessions/{sessionId}/chats/{chatId}', 'Chats', [200, 401, 404]],
  ['get', '/api/v1/sessions/{sessionId}/chats/{chatId}/messages', 'Chats', [200, 400, 401, 404]],
  // the four modes: 202 async, 201 sync or execute=false, 200 an event stream
  ['post', '/api/v1/sessions/{sessionId}/chats/{chatId}/messages', 'Chats', [200, 201, 202, 400, 401, 403, 404]],
  ['get', '/api/v1/sessions/{sessionId}/chats/{chatId}/messages/{messageId}', 'Chats', [200, 401, 404]],
  ['get', '/api/v1/sessions/{sessionId}/chats/{chatId}/messages/{messageId}/events', 'Chats', [200, 401, 404]],
  ['get', '/api/v1/sessions/{sessionId}/chats/{chatId}/messages/{messageId}/tool-calls', 'Chats', [200, 401, 404]],
  ['post', '/api/v1/sessions/{sessionId}/chats/{chatId}/messages/{messageId}/cancel', 'Chats', [200, 401, 403, 404]],
];

const EXTENSIONS: Array<[string, string]> = [
  ['get', '/api/v1/health'],
  ['post', '/api/v1/auth/login'],
  ['post', '/api/v1/auth/signup'],
  ['get', '/api/v1/auth/invitations/{secret}'],
  ['delete', '/api/v1/organizations/{id}/members/{userId}'],
  ['get', '/api/v1/lab/certificate.pem'],
  ['get', '/api/v1/lab/settings'],
  ['patch', '/api/v1/lab/settings'],
  ['put', '/api/v1/billing/plan'],
  ['get', '/api/v1/openapi.json'],
  ['get', '/api/v1/fleet/devices'],
  ['post', '/api/v1/sessions/{sessionId}/devices/{deviceId}/keep'],
  ['post', '/api/v1/reservations'],
  ['get', '/api/v1/reservations'],
  ['delete', '/api/v1/reservations/{id}'],
  ['get', '/api/v1/usage'],
  ['get', '/api/v1/fleet/hosts'],
  ['get', '/api/v1/lab/hosts'],
  ['post', '/api/v1/lab/hosts'],
  ['get', '/api/v1/lab/hosts/{hostId}'],
  ['patch', '/api/v1/lab/hosts/{hostId}'],
  ['delete', '/api/v1/lab/hosts/{hostId}'],
  ['get', '/api/v1/lab/providers'],
  ['get', '/api/v1/fleet/providers'],
  ['patch', '/api/v1/fleet/devices/{serial}'],
  ['post', '/api/v1/lab/providers'],
  ['post', '/api/v1/lab/providers/host-key'],
  ['get', '/api/v1/lab/usage'],
  ['get', '/api/v1/sessions/{sessionId}/webdriver-runs'],
  ['post', '/api/v1/sessions/{sessionId}/webdriver-runs/{runId}/takeover'],
  ['get', '/api/v1/lab/providers/{providerId}'],
  ['patch', '/api/v1/lab/providers/{providerId}'],
  ['delete', '/api/v1/lab/providers/{providerId}'],
  ['get', '/api/v1/metrics'],
  ['post', '/api/v1/lab/backup'],
  ['post', '/api/v1/sessions/{sessionId}/instances/{instanceId}/exec'],
  ['get', '/api/v1/sessions/{sessionId}/instances/{instanceId}/terminal'],
  ['get', '/api/v1/sessions/{sessionId}/devices/{deviceId}/screenshot'],
  ['get', '/api/v1/sessions/{sessionId}/devices/{deviceId}/info'],
  ['patch', '/api/v1/sessions/{sessionId}'],
  ['post', '/api/v1/sessions/{sessionId}/end'],
  ['get', '/api/v1/sessions/{sessionId}/devices/{deviceId}/elements'],
  ['post', '/api/v1/sessions/{sessionId}/devices/{deviceId}/actions'],
  ['post', '/api/v1/sessions/{sessionId}/devices/{deviceId}/reboot'],
  ['get', '/ws'],
  ['get', '/api/v1/sessions/{sessionId}/devices/{deviceId}/screen'],
  ['get', '/api/v1/sessions/{sessionId}/devices/{deviceId}/logs'],
  ['post', '/api/v1/sessions/{sessionId}/devices/{deviceId}/remote-connect'],
  ['get', '/api/v1/sessions/{sessionId}/devices/{deviceId}/remote-connect'],
  ['delete', '/api/v1/sessions/{sessionId}/devices/{deviceId}/remote-connect'],
  ['get', '/api/v1/adb-keys'],
  ['post', '/api/v1/adb-keys'],
  ['delete', '/api/v1/adb-keys/{id}'],
  ['get', '/api/v1/remote-connect/client.cjs'],
  ['get', '/api/v1/remote-connect/tunnel/{secret}'],
  ['get', '/api/v1/sessions/{sessionId}/devices/{deviceId}/screenshot.png'],
  ['get', '/api/v1/sessions/{sessionId}/devices/{deviceId}/apps'],
  ['get', '/api/v1/sessions/{sessionId}/devices/{deviceId}/files'],
  ['delete', '/api/v1/sessions/{sessionId}/devices/{deviceId}/files'],
  ['get', '/api/v1/sessions/{sessionId}/devices/{deviceId}/files/apps'],
  ['get', '/api/v1/sessions/{sessionId}/devices/{deviceId}/files/content'],
  ['put', '/api/v1/sessions/{sessionId}/devices/{deviceId}/files/content'],
  ['post', '/api/v1/sessions/{sessionId}/devices/{deviceId}/recording'],
  ['post', '/api/v1/sessions/{sessionId}/devices/{deviceId}/recording/stop'],
  ['get', '/api/v1/sessions/{sessionId}/devices/{deviceId}/shell'],
  ['post', '/api/v1/sessions/{sessionId}/devices/{deviceId}/install'],
  ['get', '/api/v1/lab/assistant'],
  ['put', '/api/v1/lab/assistant'],
  ['patch', '/api/v1/lab/assistant'],
  ['get', '/api/v1/sessions/{sessionId}/chats/{chatId}/messages/{messageId}/tool-calls/{toolCallId}/image'],
];

describe('GET /api/v1/openapi.json', () => {
  it('is OpenAPI 3.1 with the spec\'s tags', () => {
    expect(doc.openapi).toBe('3.1.0');
    const tags = doc.tags.map((tag: { name: string }) => tag.name);
    for (const tag of ['Account', 'Organizations', 'Members', 'Invitations', 'API Keys', 'Sessions', 'Instances', 'Devices', 'Billing', 'Test Results', 'Extensions']) {
      expect(tags).toContain(tag);
    }
  });

  it.each(SPEC_OPERATIONS)('%s %s has tag %s and exactly the spec\'s statuses', (method, path, tag, statuses) => {
    const op = doc.paths[path]?.[method];
    expect(op, `${method} ${path}`).toBeDefined();
    expect(op.tags).toEqual([tag]);
    expect(Object.keys(op.responses).map(Number).sort()).toEqual([...statuses].sort());
    for (const status of statuses.filter((s) => s >= 400)) {
      expect(op.responses[status].content['application/json'].schema.properties.error).toBeDefined();
    }
  });

  it.each(EXTENSIONS)('extension %s %s is tagged Extensions', (method, path) => {
    expect(doc.paths[path]?.[method]?.tags).toEqual(['Extensions']);
  });

  it('lists no operation that is neither in the spec nor an extension', () => {
    const known = new Set([...SPEC_OPERATIONS.map(([m, p]) => `${m} ${p}`), ...EXTENSIONS.map(([m, p]) => `${m} ${p}`)]);
    for (const [path, ops] of Object.entries<Record<string, unknown>>(doc.paths)) {
      for (const method of Object.keys(ops)) expect(known, `${method} ${path}`).toContain(`${method} ${path}`);
    }
  });

  it('describes request bodies and bearer security', () => {
    expect(doc.paths['/api/v1/organizations'].post.requestBody.content['application/json'].schema.required).toEqual(['name']);
    expect(doc.components.securitySchemes.bearer).toMatchObject({ type: 'http', scheme: 'bearer' });
    expect(doc.paths['/api/v1/sessions'].get.security).toEqual([{ bearer: [] }]);
  });

  it('describes the asset upload as multipart/form-data with name and file, and the download as binary', () => {
    const upload = doc.paths['/api/v1/test-results/{testResultId}/assets'].post.requestBody.content['multipart/form-data'].schema;
    expect(upload.required.sort()).toEqual(['file', 'name']);
    expect(upload.properties.file).toMatchObject({ type: 'string', format: 'binary' });
    const download = doc.paths['/api/v1/test-results/{testResultId}/assets/{assetId}'].get.responses[200];
    expect(download.content['*/*'].schema).toMatchObject({ type: 'string', format: 'binary' });
  });
});
