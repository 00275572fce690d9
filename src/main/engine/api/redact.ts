/**
 * Query parameters that are credentials: a bearer sent in the query (browsers' WebSockets) and the signature of a
 * signed upload URL, which lets anyone holding it write the file. Neither may reach a log line.
 */
const SECRET_PARAMS = /([?&](?:token|signature)=)[^&#]*/gi;

/** The URL with its credential parameters blanked. */
export const redactUrl = (url: string): string => url.replace(SECRET_PARAMS, '$1[redacted]');
