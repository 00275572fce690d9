import { Type, type Static } from 'typebox';
import { DateTime, Nullable, RoleName, Uuid } from './common.js';

export const User = Type.Object({
  id: Uuid,
  email: Type.String(),
  name: Type.String(),
  labOwner: Type.Boolean({ description: 'True for the lab owner, the first account of this Benchtop.' }),
  createdAt: DateTime,
});
export type User = Static<typeof User>;

const Email = Type.String({ format: 'email', maxLength: 254 });
const Password = Type.String({ minLength: 8, maxLength: 1024 });

export const LoginBody = Type.Object({ email: Email, password: Type.String({ minLength: 1, maxLength: 1024 }) }, { additionalProperties: false });
export const SignupBody = Type.Object(
  { email: Email, password: Password, name: Type.Optional(Type.String({ maxLength: 100 })) },
  { additionalProperties: false },
);
export const AuthToken = Type.Object({ token: Type.String(), expiresAt: DateTime, user: User });
export type AuthToken = Static<typeof AuthToken>;

export const ApiKey = Type.Object({
  id: Uuid,
  name: Type.String(),
  apiKeySuffix: Type.String({ description: 'The last characters of the secret, to tell keys apart.' }),
  createdAt: DateTime,
  lastUsedAt: Nullable(DateTime),
});
export type ApiKey = Static<typeof ApiKey>;
export const CreatedApiKey = Type.Object({
  ...ApiKey.properties,
  apiKey: Type.String({ description: 'The full secret, mob_<secret>. Shown once, never again.' }),
});
export const CreateApiKeyBody = Type.Object(
  { name: Type.String({ minLength: 1, maxLength: 100 }) },
  { additionalProperties: false },
);

export const LabSettings = Type.Object({ signupOpen: Type.Boolean() });
export const LabSettingsPatch = Type.Object({ signupOpen: Type.Optional(Type.Boolean()) }, { additionalProperties: false });

export { RoleName };
