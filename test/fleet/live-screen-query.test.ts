import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { refusedUpgrade } from '../support/ws.js';
import { client, errorCode } from '../support/engine.js';
import { adbOrSkip, allocateInUse, startLab, type TestLab } from '../support/lab.js';

const hasAdb = adbOrSkip();

describe.skipIf(!hasAdb)('the live screen refuses a bad query as every route does', () => {
  let lab: TestLab;
  let c: ReturnType<typeof client>;
  let owner: string;
  let screen: (query: string) => string;

  beforeAll(async () => {
    lab = await startLab([{ model: 'Pixel 7' }]);
    c = client(lab.engine.api);
    owner = await c.login();
    const { session, serial } = await allocateInUse(c, owner, 'Pixel 7');
    screen = (query) => `${lab.engine.api.replace(/^http/, 'ws')}/sessions/${session}/devices/${serial}/screen?token=${owner}&${query}`;
  }, 60_000);
  afterAll(() => lab?.stop());

  it('400 invalid_request, with the error body, for a bad codecs or maxSize before the upgrade', async () => {
    for (const query of ['codecs=H264', 'codecs=h264,', 'codecs=h264;rm', `codecs=${'a'.repeat(101)}`, 'maxSize=10', 'maxSize=99999', 'maxSize=big']) {
      const r = await refusedUpgrade(screen(query));
      expect(r.status, query).toBe(400);
      expect(errorCode(r), query).toBe('invalid_request');
      expect(typeof r.body.error.message).toBe('string');
    }
  });

  it('declares the 400 in the OpenAPI document', async () => {
    const doc = (await c.call('GET', '/openapi.json')).body;
    expect(Object.keys(doc.paths['/api/v1/sessions/{sessionId}/devices/{deviceId}/screen'].get.responses)).toContain('400');
  });
});
