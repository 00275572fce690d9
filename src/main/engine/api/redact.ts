/**
 * Query parameters that are credentials: a bearer sent in the query (browsers' WebSockets) and the signature of a
 * signed upload URL, which lets anyone holding it write the file. Neither may reach a log line.
 */
const SECRET_PARAMS = /([?&](?:token|signature)=)[^&#]*/gi;

/** A WebDriver session id is the credential of every command after the first: a log line keeps its first 8 characters. */
const WEBDRIVER_SESSION = /(\/wd\/hub\/session\/[^/?#]{8})[^/?#]*/gi;

/** The URL with its credential parameters (and a WebDriver session id's secret part) blanked. */
export const redactUrl = (url: string): string => url.replace(SECRET_PARAMS, '$1[redacted]').replace(WEBDRIVER_SESSION, '$1…');
