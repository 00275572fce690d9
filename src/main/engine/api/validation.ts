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
  const strict = makeAjv(false);
  const coercing = makeAjv(true);
  return ({ schema, httpPart, contentType }) => {
    if (httpPart === 'body' && contentType !== undefined && STREAMED.has(contentType)) return streamedBody;
    return compiledOnFirstUse(() => (httpPart === 'body' ? strict : coercing).compile(schema as object));
  };
}

/**
 * Compiling every route's schemas up front is most of the engine's start-up; each compiles on its route's first
 * request instead. Fastify reads a failed validation's errors from the function, so they are passed on.
 */
function compiledOnFirstUse(compile: () => ValidateFunction): ValidateFunction {
  let compiled: ValidateFunction | undefined;
  const validate = ((data: unknown) => {
    compiled ??= compile();
    const valid = compiled(data);
    validate.errors = compiled.errors;
    return valid;
  }) as ValidateFunction;
  return validate;
}
