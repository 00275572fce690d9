import AjvModule from 'ajv';
import formatsModule from 'ajv-formats';
import type { ValidateFunction } from 'ajv';
import type { FastifySchemaCompiler } from 'fastify';

// ajv and ajv-formats are CommonJS; their default export arrives wrapped under ESM.
const Ajv = (AjvModule as unknown as { default: typeof AjvModule }).default ?? AjvModule;
const addFormats = (formatsModule as unknown as { default: typeof formatsModule }).default ?? formatsModule;

function makeAjv(coerceTypes: boolean) {
  const ajv = new Ajv({ coerceTypes, useDefaults: true, removeAdditional: false, allErrors: false, strict: false });
  addFormats(ajv);
  return ajv;
}

/**
 * A multipart or raw binary body is streamed by its handler, which checks what arrives; its schema only documents
 * the body.
 */
const streamedBody = () => true;
const STREAMED = new Set(['multipart/form-data', 'application/octet-stream']);

/**
 * Query strings, params and headers arrive as text, so their numbers are coerced. JSON bodies are not:
 * {"name": 123} is a wrong type and a 400, never quietly "123". Whether extra body fields are refused or ignored
 * is each body schema's choice (additionalProperties).
 */
export function validatorCompiler(): FastifySchemaCompiler<unknown> {
  return ({ schema, httpPart, contentType }) => {
    if (httpPart === 'body' && contentType !== undefined && STREAMED.has(contentType)) return streamedBody;
    return compiledOnFirstUse(httpPart === 'body' ? 'strict' : 'coercing', schema as object);
  };
}

/**
 * One compiled validator per schema and mode for the whole process, shared by every engine in it: a schema's
 * validator depends on nothing else (no schema is added to Ajv by name), and an engine started again in the same
 * process (a restart, or the many a test worker runs) compiled the same validators anew, 2 % of a test worker's CPU.
 * The routes' schemas are a fixed set, so this holds a few hundred entries at most.
 */
const compilers: { strict?: InstanceType<typeof Ajv>; coercing?: InstanceType<typeof Ajv> } = {};
const compiled = new Map<string, ValidateFunction>();

function compile(mode: 'strict' | 'coercing', schema: object): ValidateFunction {
  const key = `${mode} ${JSON.stringify(schema)}`;
  let validate = compiled.get(key);
  if (!validate) {
    validate = (compilers[mode] ??= makeAjv(mode === 'coercing')).compile(schema);
    compiled.set(key, validate);
  }
  return validate;
}

/**
 * Compiling every route's schemas up front is most of the engine's start-up; each compiles on its route's first
 * request instead. Fastify reads a failed validation's errors from the function, so they are passed on.
 */
function compiledOnFirstUse(mode: 'strict' | 'coercing', schema: object): ValidateFunction {
  let validator: ValidateFunction | undefined;
  const validate = ((data: unknown) => {
    validator ??= compile(mode, schema);
    const valid = validator(data);
    validate.errors = validator.errors;
    return valid;
  }) as ValidateFunction;
  return validate;
}
