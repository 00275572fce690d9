import { describe, expect, it } from 'vitest';
import { ServiceError } from './errors.js';
import { checkOrganizationName } from './organization-names.js';

function failure(name: string, others: string[] = []) {
  try {
    checkOrganizationName(name, others);
  } catch (e) {
    return { kind: (e as ServiceError).kind, code: (e as ServiceError).code };
  }
  return undefined;
}

describe('checkOrganizationName', () => {
  it('trims and accepts a fresh name', () => {
    expect(checkOrganizationName('  QA lab ', ['Personal', 'Other'])).toBe('QA lab');
  });

  it.each([
    ['', 'invalid', 'invalid_name'],
    ['   ', 'invalid', 'invalid_name'],
    ['x'.repeat(101), 'invalid', 'invalid_name'],
    ['Personal', 'invalid', 'reserved_name'],
    [' personal ', 'invalid', 'reserved_name'],
    ['PERSONAL', 'invalid', 'reserved_name'],
  ])('refuses %j as %s/%s', (name, kind, code) => {
    expect(failure(name)).toEqual({ kind, code });
  });

  it('refuses a duplicate of another of the caller\'s organizations, in any case', () => {
    expect(failure('qa LAB', ['QA lab'])).toEqual({ kind: 'conflict', code: 'duplicate_name' });
  });
});
