import { describe, expect, it } from 'vitest';
import { client, useEngine } from '../support/engine.js';

const lab = useEngine();

describe('health', () => {
  it('answers 200 without auth', async () => {
    const r = await client(lab.t.api).call('GET', '/health');
    expect(r.status).toBe(200);
    expect(r.body.status).toBe('ok');
  });
});
