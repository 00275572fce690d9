import { Type, type Static, type TSchema } from 'typebox';

export const Uuid = Type.String({ format: 'uuid' });
export const DateTime = Type.String({ format: 'date-time' });
/**
 * A value or null. For a primitive this is `type: [t, "null"]` rather than anyOf: the response serializer writes
 * it directly instead of trying each branch, which matters on hot paths like session lists.
 */
export const Nullable = <T extends TSchema>(schema: T) => {
  const type = (schema as { type?: unknown }).type;
  return typeof type === 'string' && type !== 'object' && type !== 'array'
    ? Type.Unsafe<Static<T> | null>({ ...schema, type: [type, 'null'] })
    : Type.Union([schema, Type.Null()]);
};

export const RoleName = Type.Union([Type.Literal('admin'), Type.Literal('readwrite'), Type.Literal('readonly')], {
  description: 'Member role: admin, readwrite or readonly.',
});

/** Every error body of the API. */
export const ErrorBody = Type.Object(
  {
    error: Type.Object({
      code: Type.String({ description: 'Stable snake_case code, e.g. no_matching_device.' }),
      message: Type.String({ description: 'A human sentence.' }),
    }),
  },
);
export type ErrorBody = Static<typeof ErrorBody>;

/** The list wrapper shared by every list operation; nextCursor is absent on the last page. */
export const List = <T extends TSchema>(item: T) =>
  Type.Object({
    object: Type.Literal('list'),
    data: Type.Array(item),
    nextCursor: Type.Optional(Type.String()),
  });

export const Health = Type.Object({
  status: Type.Literal('ok'),
  version: Type.String(),
  signupOpen: Type.Boolean({ description: 'Whether anyone who reaches the lab may create an account; false when sign-up is by invitation only. The sign-in page reads it to offer sign-up or not.' }),
});
