import { invalid, conflict } from './errors.js';

export const PERSONAL = 'Personal';

/** Trims and checks an organization name against the spec's rules; returns the name to store. */
export function checkOrganizationName(raw: string, namesOfCallersOtherOrganizations: readonly string[]): string {
  const name = raw.trim();
  if (name === '') throw invalid('invalid_name', 'The organization name must not be blank.');
  if (name.length > 100) throw invalid('invalid_name', 'The organization name must be at most 100 characters.');
  if (name.toLowerCase() === PERSONAL.toLowerCase()) {
    throw invalid('reserved_name', `"${PERSONAL}" is reserved for each account's own organization.`);
  }
  const taken = namesOfCallersOtherOrganizations.some((n) => n.toLowerCase() === name.toLowerCase());
  if (taken) throw conflict('duplicate_name', `You already belong to an organization named "${name}".`);
  return name;
}
