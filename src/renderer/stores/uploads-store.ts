import { createStore } from 'zustand/vanilla';
import type { ApiClient } from '../../shared/client/api-client.js';
import type { StoredFile } from '../../shared/api/files.js';
import { fileFailureSentence } from '../file-errors.js';

export type UploadPhase = 'hashing' | 'uploading' | 'processing' | 'ready' | 'failed';

export interface Upload {
  key: string;
  filename: string;
  size: number;
  phase: UploadPhase;
  /** 0 to 1 within the phase: hashing and uploading report it. */
  progress: number;
  file?: StoredFile;
  error?: string;
}

/** How the bytes move: the renderer hashes in a Web Worker and PUTs with XMLHttpRequest for upload progress. */
export interface UploadTransport {
  sha256(file: Blob, onProgress: (fraction: number) => void): Promise<string>;
  put(url: string, headers: Record<string, string>, file: Blob, onProgress: (fraction: number) => void): Promise<void>;
}

export interface UploadsState {
  uploads: Upload[];
  /** Hash, create, PUT, complete; resolves with the upload's final state. `onStart` learns its key at once. */
  upload(file: Blob & { name: string }, onStart?: (key: string) => void): Promise<Upload>;
  dismiss(key: string): void;
  /** Drops every upload that has finished, ready or failed, so that old failures do not pile up. */
  clearFinished(): void;
}

const PROCESSING_POLL_MS = 500;

let counter = 0;

export function createUploadsStore(api: () => ApiClient, transport: UploadTransport, sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))) {
  return createStore<UploadsState>()((set, get) => {
    const update = (key: string, patch: Partial<Upload>) =>
      set({ uploads: get().uploads.map((u) => (u.key === key ? { ...u, ...patch } : u)) });
    const current = (key: string) => get().uploads.find((u) => u.key === key)!;
    return {
      uploads: [],
      async upload(file, onStart) {
        const key = `upload-${++counter}`;
        set({ uploads: [{ key, filename: file.name, size: file.size, phase: 'hashing', progress: 0 }, ...get().uploads] });
        onStart?.(key);
        try {
          const sha256 = await transport.sha256(file, (progress) => update(key, { progress }));
          const created = await api().createFile(file.name, file.size, sha256);
          // A file already stored under the same SHA-256 needs no bytes: it is deduplicated per organization.
          if (created.upload) {
            update(key, { phase: 'uploading', progress: 0 });
            await transport.put(created.upload.url, created.upload.headers, file, (progress) => update(key, { progress }));
            update(key, { phase: 'processing', progress: 1 });
            await api().completeFile(created.id);
          }
          update(key, { phase: 'processing', progress: 1 });
          for (;;) {
            const stored = await api().file(created.id);
            if (stored.status === 'ready') update(key, { phase: 'ready', file: stored });
            else if (stored.status === 'failed') update(key, { phase: 'failed', file: stored, error: fileFailureSentence(stored.failureReason) });
            else {
              await sleep(PROCESSING_POLL_MS);
              continue;
            }
            return current(key);
          }
        } catch (error) {
          update(key, { phase: 'failed', error: (error as Error).message });
          return current(key);
        }
      },
      dismiss(key) {
        set({ uploads: get().uploads.filter((u) => u.key !== key) });
      },
      clearFinished() {
        set({ uploads: get().uploads.filter((u) => u.phase !== 'ready' && u.phase !== 'failed') });
      },
    };
  });
}
