// bluebird ships no types: what the provider's adb client takes from it (adbkit's own promises are Bluebird's).
declare module 'bluebird' {
  const Bluebird: { resolve<T>(value: PromiseLike<T>): unknown };
  export default Bluebird;
}
