/**
 * A value made on first use, then kept. For what a module would otherwise build when it loads (an Ajv validator
 * compiles in tens of milliseconds): the engine's start should not pay for an endpoint that may never be called.
 */
export function lazily<T>(make: () => T): () => T {
  let value: T | undefined;
  return () => (value ??= make());
}
