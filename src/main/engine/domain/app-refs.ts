/*
 * An app named in a WebDriver session (`appium:app`, `appium:otherApps`, `mobile: installApp`) the way clouds take
 * one: a file stored in the lab (`lab://files/<id>`), or an http(s) URL that the lab downloads into its file store.
 * Nothing else: a path, a `file:` URL or base64 bytes would be read by Appium on the lab's host.
 */

export type AppRef = { file: string } | { url: string };

/** The most apps one new-session request installs (appium:otherApps and appium:app together). */
export const MAX_APPS = 10;
const LAB_FILE = /^lab:\/\/files\/([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})$/i;
const MAX_URL = 2048;

export class AppRefError extends Error {}

/** What a URL says in a message or a log: its origin and path, never credentials or a query's tokens. */
export function shownUrl(url: string): string {
  try {
    const u = new URL(url);
    return `${u.protocol}//${u.host}${u.pathname}`;
  } catch {
    return '(not a URL)';
  }
}

/** The clouds' app references: BrowserStack's bs://, Sauce Labs' storage:, LambdaTest's lt://. */
const CLOUD_APP_STORES: ReadonlyArray<readonly [RegExp, string]> = [
  [/^bs:\/\//i, 'BrowserStack'],
  [/^storage:/i, 'Sauce Labs'],
  [/^lt:\/\//i, 'LambdaTest'],
];

export function readAppRef(value: unknown, where: string): AppRef {
  if (typeof value !== 'string' || value.trim() === '') throw new AppRefError(`${where} must be lab://files/<id> or an http(s) URL.`);
  const text = value.trim();
  const file = LAB_FILE.exec(text);
  if (file) return { file: file[1]!.toLowerCase() };
  if (/^https?:\/\//i.test(text)) {
    if (text.length > MAX_URL) throw new AppRefError(`${where}: a URL of at most ${MAX_URL} characters.`);
    let url: URL;
    try {
      url = new URL(text);
    } catch {
      throw new AppRefError(`${where} is not a URL the lab can read.`);
    }
    return { url: url.href };
  }
  if (/^lab:/i.test(text)) throw new AppRefError(`${where}: a stored file is lab://files/<id>, with the id Files & Apps (or POST /api/v1/files/upload) gives.`);
  // A cloud's own app store, as a suite moving here names its app.
  const cloud = CLOUD_APP_STORES.find(([pattern]) => pattern.test(text));
  if (cloud) throw new AppRefError(`${where}: ${text.slice(0, 60)} is an app in the app storage of ${cloud[1]}, which this lab cannot reach; upload the app to the lab (Files & Apps, or POST /api/v1/files/upload) and name it lab://files/<id>, or give an http(s) URL the lab downloads it from.`);
  // Appium would take anything else as a path on its host; a long run of base64 is an app's bytes.
  if (text.length > 256 && /^[A-Za-z0-9+/=\s]+$/.test(text)) {
    throw new AppRefError(`${where}: the lab takes no app as base64; upload it first (Files & Apps, or POST /api/v1/files/upload) and name it lab://files/<id>.`);
  }
  throw new AppRefError(`${where} names a path or URL of a kind the lab does not read (Appium would read it on the lab's host): give lab://files/<id> or an http(s) URL.`);
}

/** appium:otherApps as Appium takes it: a list, or a JSON list in a string, or one app. */
export function readOtherApps(value: unknown): AppRef[] {
  let list = value;
  if (typeof value === 'string' && value.trim().startsWith('[')) {
    try {
      list = JSON.parse(value);
    } catch {
      throw new AppRefError('appium:otherApps: a JSON list of apps, or one app.');
    }
  }
  const refs = Array.isArray(list) ? list : [list];
  if (refs.length > MAX_APPS - 1) throw new AppRefError(`appium:otherApps: at most ${MAX_APPS - 1} apps.`);
  return refs.map((ref, i) => readAppRef(ref, `appium:otherApps[${i}]`));
}
