import { Type, type Static } from 'typebox';
import { DateTime, Nullable, RoleName, Uuid } from './common.js';
import { JOIN_PATH } from './join-path.js';

export const Organization = Type.Object({
  id: Uuid,
  name: Type.String(),
  personal: Type.Boolean(),
  personalOf: Type.Optional(Type.String({ description: 'Listed for a Personal organization you joined: its owner\'s email (your own has none).' })),
  role: RoleName,
  createdAt: DateTime,
});
export type Organization = Static<typeof Organization>;

const Name = Type.String({ maxLength: 200 });
export const OrganizationBody = Type.Object({ name: Name }, { additionalProperties: false });

export const Member = Type.Object({
  userId: Uuid,
  email: Type.String(),
  name: Type.String(),
  role: RoleName,
  joinedAt: DateTime,
});
export type Member = Static<typeof Member>;
export const ChangeRoleBody = Type.Object({ role: RoleName }, { additionalProperties: false });

export const Invitation = Type.Object({
  id: Uuid,
  organizationId: Uuid,
  organizationName: Type.String(),
  email: Type.String(),
  role: RoleName,
  status: Type.Union([Type.Literal('pending'), Type.Literal('accepted'), Type.Literal('rejected'), Type.Literal('revoked')]),
  invitedBy: Nullable(Uuid),
  invitedByEmail: Nullable(Type.String({ description: 'Who invited: their email, for the invitee to recognise.' })),
  createdAt: DateTime,
  expiresAt: DateTime,
});
export type Invitation = Static<typeof Invitation>;
/** An invitation as its organization's admins see it: with the link to hand to the invitee. */
export const SentInvitation = Type.Object({
  ...Invitation.properties,
  link: Type.String({
    description: `The invitation's page, ${JOIN_PATH}/<secret>, at an address the invitee can reach (LAN sharing's while it is on). The secret lets exactly this email sign up, even while sign-up is invitation-only.`,
  }),
});
export type SentInvitation = Static<typeof SentInvitation>;
export const InvitationSecret = Type.String({ minLength: 20, maxLength: 100, pattern: '^[A-Za-z0-9_-]+$' });
export const InviteBody = Type.Object(
  { email: Type.String({ format: 'email', maxLength: 254 }), role: RoleName },
  { additionalProperties: false },
);

export const Balance = Type.Object({
  plan: Type.String(),
  period: Type.Object({ start: DateTime, end: DateTime }),
  overageCapUsd: Type.Number(),
  subscription: Nullable(
    Type.Object({
      status: Type.Literal('active'),
      cancelAtPeriodEnd: Type.Boolean(),
      currentPeriodEnd: DateTime,
    }),
  ),
  secondsRemaining: Type.Object({ devices: Type.Integer(), instances: Type.Integer() }),
});
export type Balance = Static<typeof Balance>;
export const SetPlanBody = Type.Object(
  { plan: Type.String({ minLength: 1, maxLength: 50 }), cancelAtPeriodEnd: Type.Optional(Type.Boolean()) },
  { additionalProperties: false },
);
