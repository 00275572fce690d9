import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { client, startEngine, type TestEngine } from '../support/engine.js';

let t: TestEngine;
beforeAll(async () => {
  t = await startEngine();
});
afterAll(() => t.stop());

describe('health', () => {
  it('answers 200 without auth', async () => {
    const r = await client(t.api).call('GET', '/health');
    expect(r.status).toBe(200);
    expect(r.body.status).toBe('ok');
  });
});
