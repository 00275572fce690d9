/** Saves a blob as a file through the browser's download, as a link with a download name would. */
export function saveBlob(blob: Blob, filename: string): void {
  const a = document.createElement('a');
  a.href = URL.createObjectURL(blob);
  a.download = filename;
  a.click();
  setTimeout(() => URL.revokeObjectURL(a.href), 10_000);
}

/** A file name safe on every desktop: the phone's name and the time, e.g. Pixel-7-2026-11-25T12-00-00-000Z.png. */
export const stampedName = (name: string, extension: string) =>
  `${name.replace(/[^\w.-]+/g, '-')}-${new Date().toISOString().replace(/[:.]/g, '-')}.${extension}`;
