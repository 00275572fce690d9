import type { UploadTransport } from './stores/uploads-store.js';

/** SHA-256 in a Web Worker, so that hashing a large APK never freezes the page; the PUT by XMLHttpRequest, whose upload events give progress (fetch has none). */
export const browserUploadTransport = (token: () => string | undefined): UploadTransport => ({
  sha256(file, onProgress) {
    return new Promise((resolve, reject) => {
      const worker = new Worker(new URL('./workers/sha256-worker.ts', import.meta.url), { type: 'module' });
      worker.onmessage = (event: MessageEvent<{ progress?: number; sha256?: string; error?: string }>) => {
        const { progress, sha256, error } = event.data;
        if (progress !== undefined) onProgress(progress);
        if (sha256 === undefined && error === undefined) return;
        worker.terminate();
        if (sha256) resolve(sha256);
        else reject(new Error(`Hashing failed: ${error}`));
      };
      worker.onerror = (event) => {
        worker.terminate();
        reject(new Error(`Hashing failed: ${event.message}`));
      };
      worker.postMessage(file);
    });
  },
  put(url, headers, file, onProgress) {
    return new Promise((resolve, reject) => {
      const xhr = new XMLHttpRequest();
      xhr.open('PUT', url);
      for (const [name, value] of Object.entries(headers)) xhr.setRequestHeader(name, value);
      const bearer = token();
      // The upload URL is on the engine's own origin; it may need the bearer like any other API call.
      if (bearer && !Object.keys(headers).some((h) => h.toLowerCase() === 'authorization')) xhr.setRequestHeader('authorization', `Bearer ${bearer}`);
      xhr.upload.onprogress = (event) => {
        if (event.lengthComputable) onProgress(event.loaded / event.total);
      };
      xhr.onload = () => {
        if (xhr.status >= 200 && xhr.status < 300) return resolve();
        let message = `Upload failed: HTTP ${xhr.status}`;
        try {
          message = (JSON.parse(xhr.responseText) as { error: { message: string } }).error.message;
        } catch {
          // not the API's error body: keep the status
        }
        reject(new Error(message));
      };
      xhr.onerror = () => reject(new Error('Upload failed: the connection was lost.'));
      xhr.send(file);
    });
  },
});
