import { Type, type Static } from 'typebox';

export const CreateInstanceBody = Type.Object(
  { os: Type.String({ maxLength: 50, description: 'Only macos is supported.' }) },
  { additionalProperties: false },
);
export type CreateInstanceBody = Static<typeof CreateInstanceBody>;

export const ExecBody = Type.Object(
  {
    command: Type.String({ minLength: 1, maxLength: 100_000, description: 'Run by the login shell of the instance.' }),
    timeoutSeconds: Type.Optional(Type.Integer({ minimum: 1, maximum: 3600, default: 60, description: 'The command is killed after this long.' })),
  },
  { additionalProperties: false },
);
export type ExecBody = Static<typeof ExecBody>;

export const ExecResult = Type.Object({
  exitCode: Type.Union([Type.Integer(), Type.Null()], { description: 'null when the command was killed or timed out.' }),
  stdout: Type.String(),
  stderr: Type.String(),
  timedOut: Type.Boolean(),
  truncated: Type.Boolean({ description: 'Output past 4 MiB per stream was dropped.' }),
});
export type ExecResult = Static<typeof ExecResult>;
