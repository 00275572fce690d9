import { downloadApp, DownloadRefused, type Resolver } from '../blobs/app-download.js';
import type { BlobStore } from '../blobs/blob-store.js';
import { shownUrl, type AppRef } from '../domain/app-refs.js';
import { ServiceError } from '../domain/errors.js';
import type { FileRow } from '../store/files.js';
import type { FileManager } from './files.js';
import type { Scope } from './scope.js';

/** Why an app a session names cannot be installed: a sentence for the client (W3C's invalid argument). */
export class AppUnavailable extends Error {}

export interface WebDriverAppsOptions {
  /** The asset size limit: a download is bounded as an upload is. */
  maxBytes: number;
  /** How long a download's server may stay silent. */
  timeoutMs: number;
  resolve?: Resolver;
  ownAddresses?: () => string[];
}

/** Reading an app's manifest after a download takes well under a second; this bounds a pathological one. */
const PROCESSING_TIMEOUT_MS = 60_000;

/**
 * The apps a WebDriver session names, as files of its organization's store: `lab://files/<id>` is a ready file of the
 * caller's organization (another organization's id is refused as an unknown one), and an http(s) URL is downloaded by
 * the lab into the store, where the same bytes are the same file (SHA-256), and a URL answered before is asked again
 * with its validators, so that an unchanged app is not downloaded twice.
 */
export class WebDriverApps {
  /** The file each URL gave, with its validators, by organization and URL. */
  private readonly fetched = new Map<string, { fileId: string; etag?: string; lastModified?: string }>();
  /** Downloads under way: two sessions naming one URL at once share one download. */
  private readonly downloading = new Map<string, Promise<FileRow>>();

  constructor(
    private readonly files: Pick<FileManager, 'readyFile' | 'upload' | 'get' | 'pathOf'>,
    private readonly blobs: Pick<BlobStore, 'stage'>,
    private readonly options: WebDriverAppsOptions,
  ) {}

  /** The stored, ready app file `ref` names, for a phone of `platform`; `where` names it in a refusal. */
  async file(scope: Scope, ref: AppRef, platform: 'android' | 'ios', where: string): Promise<FileRow> {
    const file = 'file' in ref ? this.stored(scope, ref.file, where) : await this.download(scope, ref.url, where);
    if (file.platform !== platform) {
      throw new AppUnavailable(`${where}: ${file.filename} is an ${file.platform === 'ios' ? 'iOS' : 'Android'} app; this session's phone is ${platform === 'ios' ? 'an iPhone' : 'Android'}.`);
    }
    return file;
  }

  /** Where a stored app's bytes are, for the lab's own install path. */
  pathOf(file: FileRow): string {
    return this.files.pathOf(file);
  }

  private stored(scope: Scope, id: string, where: string): FileRow {
    try {
      return this.files.readyFile(scope, id);
    } catch (error) {
      if (!(error instanceof ServiceError)) throw error;
      // Another organization's file is no file of yours: the same words as an id that never existed.
      throw new AppUnavailable(error.code === 'file_not_found' ? `${where}: no file lab://files/${id} in your organization (Files & Apps lists them).` : `${where}: ${error.message}`);
    }
  }

  private download(scope: Scope, url: string, where: string): Promise<FileRow> {
    const key = `${scope.organization.id}\n${url}`;
    let running = this.downloading.get(key);
    if (!running) {
      running = this.fetch(scope, key, url, where).finally(() => this.downloading.delete(key));
      this.downloading.set(key, running);
    }
    return running;
  }

  private async fetch(scope: Scope, key: string, url: string, where: string): Promise<FileRow> {
    const before = this.fetched.get(key);
    const known = before ? this.current(scope, before.fileId) : undefined;
    let result;
    try {
      result = await downloadApp(url, this.blobs, { ...this.options, ...(known ? { etag: before!.etag, lastModified: before!.lastModified } : {}) });
    } catch (error) {
      if (error instanceof DownloadRefused) throw new AppUnavailable(`${where}: ${error.message}`);
      throw error;
    }
    if (result.notModified) return known!;
    const { file } = await this.files.upload(scope, result.filename, result.content);
    const settled = await this.processed(scope, file.id);
    if (settled.status !== 'ready') {
      throw new AppUnavailable(`${where}: what ${shownUrl(url)} sent is not an app the lab can install (${settled.failureReason ?? settled.status}).`);
    }
    this.fetched.set(key, { fileId: settled.id, ...(result.etag ? { etag: result.etag } : {}), ...(result.lastModified ? { lastModified: result.lastModified } : {}) });
    return settled;
  }

  /** A file downloaded before, if it is still stored and ready. */
  private current(scope: Scope, fileId: string): FileRow | undefined {
    try {
      const file = this.files.get(scope, fileId);
      return file.status === 'ready' ? file : undefined;
    } catch {
      return undefined;
    }
  }

  /** The file once the lab has read the app in it (its package or bundle id). */
  private async processed(scope: Scope, id: string): Promise<FileRow> {
    const deadline = Date.now() + PROCESSING_TIMEOUT_MS;
    for (;;) {
      const file = this.files.get(scope, id);
      if (file.status !== 'processing' || Date.now() > deadline) return file;
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  }
}
