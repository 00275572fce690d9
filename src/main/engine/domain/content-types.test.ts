import { describe, expect, it } from 'vitest';
import { contentTypeOf } from './content-types.js';

describe('contentTypeOf', () => {
  it.each([
    ['image/png', 'shot.bin', 'image/png'],
    ['text/plain; charset=utf-8', 'x', 'text/plain; charset=utf-8'],
    ['text/plain', 'report.html', 'text/html'],
    ['text/plain', 'notes', 'text/plain'],
    ['application/zip', 'report.html', 'application/zip'],
    ['application/octet-stream', 'trace.zip', 'application/zip'],
    [undefined, 'video.WEBM', 'video/webm'],
    ['', 'report.html', 'text/html'],
    ['not a type', 'log.txt', 'text/plain'],
    ['text/plain\r\nx-evil: 1', 'a.json', 'application/json'],
    [undefined, 'archive', 'application/octet-stream'],
    [undefined, 'name.unknown', 'application/octet-stream'],
    [undefined, '.zip', 'application/zip'],
    [undefined, 'x.constructor', 'application/octet-stream'],
  ])('declared %s, name %s: %s', (declared, name, expected) => {
    expect(contentTypeOf(declared, name)).toBe(expected);
  });
});
