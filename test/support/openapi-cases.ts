import { randomUUID } from 'node:crypto';

/*
 * Requests made from the engine's own OpenAPI document, as Schemathesis makes them (it is on PyPI, which this machine
 * cannot reach): values that satisfy each schema, and values that break it in exactly one place. The schemas are
 * TypeBox's, so the keywords read here are the ones TypeBox writes (no $ref).
 */

export type Schema = any;

/** One operation of the OpenAPI document, with the statuses it declares. */
export interface Operation {
  key: string;
  method: string;
  path: string;
  spec: Schema;
  declared: number[];
}

/** Every operation of an OpenAPI document, in its order. */
export function operationsOf(document: { paths: Record<string, Record<string, Schema>> }): Operation[] {
  return Object.entries(document.paths).flatMap(([path, methods]) =>
    Object.entries(methods).map(([method, spec]) => ({ key: `${method} ${path}`, method, path, spec, declared: Object.keys(spec.responses ?? {}).map(Number) })),
  );
}

/** A small seeded generator (mulberry32): the same seed makes the same requests, so a failure can be replayed. */
export function seeded(seed: number) {
  let a = seed >>> 0;
  const next = () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  return {
    next,
    int: (min: number, max: number) => min + Math.floor(next() * (max - min + 1)),
    pick: <T>(items: readonly T[]): T => items[Math.floor(next() * items.length)]!,
    chance: (p: number) => next() < p,
  };
}
export type Rng = ReturnType<typeof seeded>;

/** Text that is valid as a string but tries the parsers: unicode, controls, separators, traversal, markup. */
const AWKWARD = ['a', 'Zoë 📱', '../../etc/passwd', '%2e%2e%2f', 'a\u0000b', '<script>', "' OR 1=1 --", '\u202e', ' ', 'x'.repeat(64), '{}', '-1', '1e309'];

function sampleString(schema: Schema, rng: Rng): string {
  if (schema.enum) return rng.pick(schema.enum);
  if (schema.const !== undefined) return schema.const;
  if (schema.format === 'uuid') return randomUUID();
  if (schema.format === 'email') return `fuzz-${rng.int(0, 1e9)}@lab.test`;
  if (schema.format === 'date-time') return new Date(Date.now() + rng.int(-48, 48) * 3_600_000).toISOString();
  if (schema.pattern === '^[0-9a-fA-F]{64}$') return '0'.repeat(64);
  if (schema.pattern?.startsWith('^https?://')) return 'http://127.0.0.1:9/';
  const min = schema.minLength ?? 0;
  const max = Math.min(schema.maxLength ?? 80, 200);
  let text = rng.pick(AWKWARD);
  if (schema.pattern) text = 'a';
  if (text.length > max) text = text.slice(0, max);
  while (text.length < min) text += 'a';
  return text;
}

/** A value the schema accepts (best effort for patterns, which are few and simple here). */
export function sample(schema: Schema, rng: Rng, depth = 0): unknown {
  if (!schema || depth > 6) return null;
  const choices = schema.anyOf ?? schema.oneOf;
  if (choices) return sample(rng.pick(choices), rng, depth + 1);
  if (schema.allOf) return Object.assign({}, ...schema.allOf.map((s: Schema) => sample(s, rng, depth + 1)));
  if (schema.const !== undefined) return schema.const;
  if (schema.enum) return rng.pick(schema.enum);
  const type = Array.isArray(schema.type) ? rng.pick(schema.type) : schema.type;
  switch (type) {
    case 'object': {
      const out: Record<string, unknown> = {};
      for (const [key, property] of Object.entries<Schema>(schema.properties ?? {})) {
        if ((schema.required ?? []).includes(key) || rng.chance(0.5)) out[key] = sample(property, rng, depth + 1);
      }
      return out;
    }
    case 'array': {
      const min = schema.minItems ?? 0;
      const length = rng.int(min, Math.max(min, Math.min(schema.maxItems ?? 3, 3)));
      return Array.from({ length }, () => sample(schema.items, rng, depth + 1));
    }
    case 'integer':
    case 'number': {
      const min = schema.minimum ?? (schema.exclusiveMinimum !== undefined ? schema.exclusiveMinimum + 1 : 0);
      const max = schema.maximum ?? min + 1000;
      const value = rng.pick([min, max, min + (max - min) / 2]);
      return type === 'integer' ? Math.floor(value) : value;
    }
    case 'boolean':
      return rng.chance(0.5);
    case 'string':
      return sampleString(schema, rng);
    case 'null':
      return null;
    default:
      return {};
  }
}

/** One way a value breaks its schema, and what it is, for the failure message. */
export interface Broken {
  what: string;
  value: unknown;
}

/** Values the schema refuses: each breaks it in one place (a type, a bound, a required or unknown property). */
export function broken(schema: Schema, rng: Rng, path = 'body', depth = 0): Broken[] {
  if (!schema || depth > 4 || schema.anyOf || schema.oneOf || schema.allOf) return [];
  const out: Broken[] = [];
  const type = schema.type;
  if (type === 'object') {
    const valid = sample(schema, rng) as Record<string, unknown>;
    out.push({ what: `${path} as a list`, value: [valid] });
    out.push({ what: `${path} as a string`, value: 'not an object' });
    for (const key of schema.required ?? []) {
      const { [key]: _, ...rest } = valid;
      out.push({ what: `${path} without its required ${key}`, value: rest });
    }
    if (schema.additionalProperties === false) out.push({ what: `${path} with an unknown property`, value: { ...valid, fuzzUnknown: 1 } });
    for (const [key, property] of Object.entries<Schema>(schema.properties ?? {})) {
      for (const inner of broken(property, rng, `${path}.${key}`, depth + 1)) {
        out.push({ what: inner.what, value: { ...valid, [key]: inner.value } });
      }
    }
  } else if (type === 'array') {
    out.push({ what: `${path} as an object`, value: { items: [] } });
    if (schema.maxItems !== undefined && schema.maxItems < 1000) {
      out.push({ what: `${path} over maxItems ${schema.maxItems}`, value: Array.from({ length: schema.maxItems + 1 }, () => sample(schema.items, rng)) });
    }
  } else if (type === 'string') {
    out.push({ what: `${path} as a number`, value: 12345 });
    if (schema.maxLength !== undefined) out.push({ what: `${path} over maxLength ${schema.maxLength}`, value: 'x'.repeat(schema.maxLength + 1) });
    if (schema.minLength) out.push({ what: `${path} under minLength ${schema.minLength}`, value: '' });
    if (schema.format === 'uuid') out.push({ what: `${path} not a UUID`, value: 'not-a-uuid' });
    if (schema.format === 'date-time') out.push({ what: `${path} not a time`, value: 'yesterday' });
    if (schema.enum) out.push({ what: `${path} outside its enum`, value: 'fuzz-not-listed' });
  } else if (type === 'integer' || type === 'number') {
    out.push({ what: `${path} as a string`, value: 'seven' });
    if (schema.minimum !== undefined) out.push({ what: `${path} under minimum ${schema.minimum}`, value: schema.minimum - 1 });
    if (schema.maximum !== undefined) out.push({ what: `${path} over maximum ${schema.maximum}`, value: schema.maximum + 1 });
    if (type === 'integer') out.push({ what: `${path} not whole`, value: 1.5 });
  } else if (type === 'boolean') {
    out.push({ what: `${path} as an object`, value: { yes: true } });
  }
  return out;
}

/** A query or path parameter broken as text: what a URL can carry that its schema refuses. */
export function brokenParameter(schema: Schema): Broken[] {
  const out: Broken[] = [];
  if (schema?.type === 'integer' || schema?.type === 'number') {
    out.push({ what: 'not a number', value: 'seven' });
    if (schema.minimum !== undefined) out.push({ what: `under minimum ${schema.minimum}`, value: String(schema.minimum - 1) });
    if (schema.maximum !== undefined) out.push({ what: `over maximum ${schema.maximum}`, value: String(schema.maximum + 1) });
  } else if (schema?.type === 'string') {
    if (schema.format === 'uuid') out.push({ what: 'not a UUID', value: 'not-a-uuid' });
    if (schema.format === 'date-time') out.push({ what: 'not a time', value: 'yesterday' });
    if (schema.enum) out.push({ what: 'outside its enum', value: 'fuzz-not-listed' });
    if (schema.maxLength !== undefined) out.push({ what: `over maxLength ${schema.maxLength}`, value: 'x'.repeat(schema.maxLength + 1) });
  } else if (schema?.type === 'boolean') {
    out.push({ what: 'not a boolean', value: 'perhaps' });
  }
  return out;
}
