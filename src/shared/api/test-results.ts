import { Type, type Static } from 'typebox';
import { DateTime, Nullable, Uuid } from './common.js';

export const TestResultStatus = Type.Union(
  [
    Type.Literal('queued'),
    Type.Literal('running'),
    Type.Literal('passed'),
    Type.Literal('failed'),
    Type.Literal('skipped'),
    Type.Literal('interrupted'),
  ],
  { description: 'queued or running while the run goes on; passed, failed, skipped or interrupted once it is over. Any status may follow any other.' },
);
export type TestResultStatus = Static<typeof TestResultStatus>;

/** JSON kept exactly as the reporter sent it: any keys, any values. */
const FreeForm = (description: string) => Type.Object({}, { additionalProperties: true, description });

const GitText = Type.Optional(Nullable(Type.String({ maxLength: 65_536 })));
/** The known fields are typed so that a wrong type is refused; any other field the reporter adds is kept. */
const Git = Type.Object(
  { commitSha: GitText, commitMessage: GitText, authorName: GitText, branch: GitText },
  { additionalProperties: true, description: 'The commit the run tested, as the reporter sends it.' },
);

const Name = Type.String({ minLength: 1, maxLength: 1024, pattern: '\\S', description: 'What ran, e.g. the project or suite.' });
const UserAgent = Nullable(Type.String({ maxLength: 1024, description: 'The reporter that sent the result.' }));
const Tags = Type.Array(Type.String({ maxLength: 1024 }));
/** mobilewright's reporter sends a plain string (its `environment` option); other reporters send an object. */
const Environment = Nullable(
  Type.Union([FreeForm('Where the run happened (CI, OS, browser, ...), free-form.'), Type.String({ maxLength: 65_536 })], {
    description: 'Where the run happened (CI, OS, browser, ...): an object, free-form, or a string.',
  }),
);
const Stats = Nullable(FreeForm('The run\'s statistics, free-form: Playwright sends expected, unexpected, flaky, skipped, duration and startTime.'));
const Reason = Nullable(Type.String({ maxLength: 1000, description: 'Why the run ended with its status, in the words of its client or reporter: a WebDriver run\'s is the reason its client gave with `benchtop: status`.' }));
const SessionId = Nullable(Type.String({ format: 'uuid', description: 'A session of the same organization the run used.' }));

export const TestResult = Type.Object({
  id: Uuid,
  organizationId: Uuid,
  name: Type.String(),
  userAgent: Nullable(Type.String()),
  status: TestResultStatus,
  reason: Reason,
  git: Nullable(Git),
  tags: Type.Array(Type.String()),
  environment: Environment,
  stats: Stats,
  sessionId: Nullable(Uuid),
  createdBy: Nullable(Uuid),
  startedAt: Nullable(DateTime),
  finishedAt: Nullable(DateTime),
  createdAt: DateTime,
  updatedAt: DateTime,
  filesRemovedAt: Nullable(
    Type.String({
      format: 'date-time',
      description: "When the lab removed this result's files (its assets: videos, traces, logs), kept past the lab owner's retention period (lab settings, testResultFiles.keepDays); the result itself stays. null while the lab keeps them.",
    }),
  ),
});
export type TestResult = Static<typeof TestResult>;

/**
 * Only name is required; status defaults to queued. Unknown top-level fields are ignored rather than refused
 * (reporters add fields over time), so this body has no additionalProperties: false; a wrong type is still a 400.
 */
export const CreateTestResultBody = Type.Object({
  name: Name,
  userAgent: Type.Optional(UserAgent),
  status: Type.Optional(TestResultStatus),
  reason: Type.Optional(Reason),
  git: Type.Optional(Nullable(Git)),
  tags: Type.Optional(Tags),
  environment: Type.Optional(Environment),
  stats: Type.Optional(Stats),
  sessionId: Type.Optional(SessionId),
  startedAt: Type.Optional(Nullable(DateTime)),
  finishedAt: Type.Optional(Nullable(DateTime)),
});
export type CreateTestResultBody = Static<typeof CreateTestResultBody>;

/** Only the fields present change; null clears a nullable field. */
export const UpdateTestResultBody = Type.Partial(CreateTestResultBody);
export type UpdateTestResultBody = Static<typeof UpdateTestResultBody>;

export const TestResultListQuery = Type.Object({
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 500, default: 100 })),
  before: Type.Optional(Type.String({ format: 'date-time', description: 'Only results created strictly before this time: the previous page\'s nextCursor.' })),
  status: Type.Optional(TestResultStatus),
  sessionId: Type.Optional(Type.String({ format: 'uuid', description: 'Only results of this session.' })),
  tag: Type.Optional(Type.String({ minLength: 1, maxLength: 1024, description: 'Only results carrying this tag exactly, e.g. build:nightly-42 (a CI build\'s runs, as a cloud lab groups them).' })),
});
export type TestResultListQuery = Static<typeof TestResultListQuery>;

export const Asset = Type.Object({
  id: Uuid,
  name: Type.String({ description: 'The file name given at upload, e.g. trace.zip.' }),
  contentType: Type.String(),
  size: Type.Integer({ description: 'Bytes.' }),
  sha256: Type.String({ description: 'Hex SHA-256 of the content.' }),
  createdAt: DateTime,
});
export type Asset = Static<typeof Asset>;

/** The form of an asset upload, for the OpenAPI document: the handler streams the parts and checks them itself. */
export const AssetUploadForm = Type.Object({
  name: Type.String({ description: 'The asset\'s file name, e.g. trace.zip.' }),
  file: Type.String({ format: 'binary', description: 'The content.' }),
});
