import { Type, type Static } from 'typebox';

/** One command of a running WebDriver session, as its command log keeps it. */
export const WebDriverCommand = Type.Object({
  at: Type.String({ format: 'date-time' }),
  method: Type.String(),
  path: Type.String({ description: 'The command\'s path after /session/{id} (empty for the session itself).' }),
  status: Type.Integer(),
  ms: Type.Number(),
  error: Type.Optional(Type.String({ description: 'The W3C error name, or why it failed.' })),
  label: Type.Optional(Type.String({ description: 'What it was, in words: a script\'s name (`mobile: swipe`), a find\'s locator (`xpath //...`), how the session ended.' })),
});

/** A WebDriver session running on one of a lab session's phones (its secret id is never shown here). */
export const WebDriverRun = Type.Object({
  id: Type.String({ format: 'uuid', description: 'The lab\'s id for the run (not the WebDriver session id).' }),
  serial: Type.String(),
  deviceName: Type.String(),
  platform: Type.Union([Type.Literal('android'), Type.Literal('ios')]),
  testResultId: Type.String({ format: 'uuid' }),
  createdBy: Type.String({ description: 'The email of the member whose key started it.' }),
  startedAt: Type.String({ format: 'date-time' }),
  lastCommandAt: Type.String({ format: 'date-time' }),
  newCommandTimeoutSeconds: Type.Number(),
  commands: Type.Array(WebDriverCommand, { description: 'The latest 200 commands, oldest first.' }),
});
export type WebDriverRun = Static<typeof WebDriverRun>;

export const WebDriverRunList = Type.Object({ object: Type.Literal('list'), data: Type.Array(WebDriverRun) });
export type WebDriverRunList = Static<typeof WebDriverRunList>;
