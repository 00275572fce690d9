import { Type } from 'typebox';

const BINARY = { type: 'string', format: 'binary' };

/**
 * A response that is not JSON, declared under the media types it is served as, so that the OpenAPI document does not
 * call it application/json (which a plain schema would).
 */
export const served = <T = Buffer>(mediaTypes: readonly string[], description: string, schema: object = BINARY) =>
  Type.Unsafe<T>({ description, content: Object.fromEntries(mediaTypes.map((type) => [type, { schema }])) });

/**
 * A Server-Sent Events stream, documented as the OpenAPI media type registry models text/event-stream: in OpenAPI
 * 3.1, whose media types have no itemSchema, an array of its events, each an object of the event's fields, its
 * `event:` naming the kind and its `data:` that kind's JSON.
 */
export function eventStream(description: string, kinds: Record<string, object>, id?: object) {
  const events = Object.entries(kinds).map(([kind, data]) => ({
    type: 'object',
    title: kind,
    required: [...(id ? ['id'] : []), 'event', 'data'],
    properties: {
      ...(id ? { id } : {}),
      event: { enum: [kind] },
      data: { type: 'string', contentMediaType: 'application/json', contentSchema: data },
    },
  }));
  return Type.Unsafe<string>({ description, content: { 'text/event-stream': { schema: { type: 'array', items: { oneOf: events } } } } });
}
