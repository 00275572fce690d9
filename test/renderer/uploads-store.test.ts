/** The upload flow against the Files API (issue 6): hash, create, PUT with progress, complete, wait until ready. */
import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { createUploadsStore, type UploadTransport } from '../../src/renderer/stores/uploads-store.js';
import { buildApk } from '../../src/sim/android/apk.js';
import { useEngine } from '../support/engine.js';
import { clientFor } from './support.js';

/** The browser's transport, in Node: the same hash, the PUT by fetch, progress at the start and the end. */
const nodeTransport = (token: string): UploadTransport => ({
  async sha256(file, onProgress) {
    onProgress(0.5);
    return createHash('sha256').update(Buffer.from(await file.arrayBuffer())).digest('hex');
  },
  async put(url, headers, file, onProgress) {
    onProgress(0);
    const r = await fetch(url, { method: 'PUT', headers: { authorization: `Bearer ${token}`, ...headers }, body: Buffer.from(await file.arrayBuffer()) });
    if (!r.ok) throw new Error(`PUT answered ${r.status}`);
    onProgress(1);
  },
});

describe('uploads store', () => {
  const lab = useEngine();

  it('fails with the hashing error, without calling the API', async () => {
    const store = createUploadsStore(() => clientFor(lab.t.api, lab.owner), {
      sha256: () => Promise.reject(new Error('Hashing failed: the file could not be read.')),
      put: () => Promise.reject(new Error('not reached')),
    });
    const file = Object.assign(new Blob([Buffer.from('apk')]), { name: 'broken.apk' });
    const result = await store.getState().upload(file);
    expect(result).toMatchObject({ filename: 'broken.apk', phase: 'failed', error: 'Hashing failed: the file could not be read.' });
    store.getState().dismiss(result.key);
    expect(store.getState().uploads).toEqual([]);
  });

  it('takes an APK through every phase to ready, with its bundle id', async () => {
    const phases: string[] = [];
    const store = createUploadsStore(() => clientFor(lab.t.api, lab.owner), nodeTransport(lab.owner), () => new Promise((r) => setTimeout(r, 20)));
    store.subscribe((s) => {
      const phase = s.uploads[0]?.phase;
      if (phase && phases.at(-1) !== phase) phases.push(phase);
    });
    const apk = buildApk({ packageName: 'com.benchtop.store.test', label: 'Store Test' });
    const result = await store.getState().upload(Object.assign(new Blob([new Uint8Array(apk)]), { name: 'store-test.apk' }));
    expect(result.error).toBeUndefined();
    expect(result).toMatchObject({ phase: 'ready', file: { filename: 'store-test.apk', bundleId: 'com.benchtop.store.test', sha256: createHash('sha256').update(apk).digest('hex') } });
    expect(phases).toEqual(['hashing', 'uploading', 'processing', 'ready']);
  });
});
