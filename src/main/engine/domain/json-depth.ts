/**
 * The deepest nesting a JSON body may have. Free-form fields (a test result's stats and git, a chat's metadata)
 * are stored and served back as sent, and serializing a few thousand levels overflows the stack: the fix is to
 * refuse such a body before it is parsed. Real payloads (Playwright's stats, git facts) are a few levels deep.
 */
export const MAX_JSON_DEPTH = 64;

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const OPEN_BRACE = 0x7b;
const OPEN_BRACKET = 0x5b;
const CLOSE_BRACE = 0x7d;
const CLOSE_BRACKET = 0x5d;

/**
 * Whether the JSON text nests objects and arrays deeper than `max`. One pass over the text, skipping strings;
 * it needs no valid JSON (the parser judges that afterwards), only that brackets inside strings do not count.
 */
export function jsonTooDeep(text: string, max = MAX_JSON_DEPTH): boolean {
  // Fewer characters than the limit cannot hold that many opening brackets.
  if (text.length <= max) return false;
  let depth = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === BACKSLASH) i++;
      else if (c === QUOTE) inString = false;
    } else if (c === QUOTE) {
      inString = true;
    } else if (c === OPEN_BRACE || c === OPEN_BRACKET) {
      if (++depth > max) return true;
    } else if (c === CLOSE_BRACE || c === CLOSE_BRACKET) {
      depth--;
    }
  }
  return false;
}
