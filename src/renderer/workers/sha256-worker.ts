/**
 * Hashes a file off the page's thread. Web Crypto digests a whole buffer at once, so progress covers reading the
 * file, which is the part that takes time for a large APK on a slow disk.
 */
const CHUNK = 4 * 1024 * 1024;

self.onmessage = async (event: MessageEvent<Blob>) => {
  try {
    const file = event.data;
    const bytes = new Uint8Array(file.size);
    for (let offset = 0; offset < file.size; offset += CHUNK) {
      bytes.set(new Uint8Array(await file.slice(offset, offset + CHUNK).arrayBuffer()), offset);
      self.postMessage({ progress: Math.min(1, (offset + CHUNK) / file.size) });
    }
    const digest = new Uint8Array(await crypto.subtle.digest('SHA-256', bytes));
    self.postMessage({ progress: 1, sha256: Array.from(digest, (b) => b.toString(16).padStart(2, '0')).join('') });
  } catch (error) {
    self.postMessage({ error: (error as Error).message });
  }
};
