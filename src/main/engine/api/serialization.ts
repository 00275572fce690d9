import { SerializerSelector } from '@fastify/fast-json-stringify-compiler';

type SerializerFactory = ReturnType<typeof SerializerSelector>;
type Serialize = (doc: unknown) => string;

/**
 * Compiled serializers for the whole process, by schema and by the compiler's settings: an engine started again in
 * the same process (a restart, or the many a test worker runs) compiled the same ones anew. The engine passes no
 * function among the settings, so their JSON tells them apart.
 */
const compiled = new Map<string, Serialize>();

/**
 * Fastify's own response serializers (fast-json-stringify), each compiled on its route's first response rather than
 * at start-up, where compiling them all would cost a fifth of a second before the lab answers.
 */
export const lazySerializers: SerializerFactory = (externalSchemas, options) => {
  const compile = SerializerSelector()(externalSchemas, options);
  const settings = JSON.stringify({ externalSchemas, options });
  return (route) => {
    let serialize: Serialize | undefined;
    return (doc) => {
      if (!serialize) {
        const key = `${settings}\n${JSON.stringify(route.schema)}`;
        serialize = compiled.get(key);
        if (!serialize) compiled.set(key, (serialize = compile(route)));
      }
      return serialize(doc);
    };
  };
};
