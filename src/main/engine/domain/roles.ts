/** The three member roles, weakest first. The strings are part of the API. */
export const ROLES = ['readonly', 'readwrite', 'admin'] as const;
export type Role = (typeof ROLES)[number];

const rank = (role: Role) => ROLES.indexOf(role);

export function atLeast(role: Role, required: Role): boolean {
  return rank(role) >= rank(required);
}
