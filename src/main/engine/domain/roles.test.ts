import { describe, expect, it } from 'vitest';
import { atLeast, type Role } from './roles.js';

describe('atLeast', () => {
  const table: Array<[Role, Role, boolean]> = [
    ['admin', 'admin', true],
    ['admin', 'readwrite', true],
    ['admin', 'readonly', true],
    ['readwrite', 'admin', false],
    ['readwrite', 'readwrite', true],
    ['readwrite', 'readonly', true],
    ['readonly', 'admin', false],
    ['readonly', 'readwrite', false],
    ['readonly', 'readonly', true],
  ];
  it.each(table)('%s meets %s: %s', (role, required, expected) => {
    expect(atLeast(role, required)).toBe(expected);
  });
});
