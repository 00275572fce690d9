/**
 * The layer rules of DESIGN.md, checked by `npm run lint`. A violation is a design question: move the code to the
 * layer that owns it rather than silencing the rule.
 */
const ENGINE = '^src/main/engine';
/** Node built-ins and packages that do I/O: domain/ holds pure rules only. */
const IO = '^(node:)?(fs|fs/promises|net|http|https|http2|tls|dgram|child_process|worker_threads|cluster|dns|readline)$|^(better-sqlite3|ssh2|undici|ws|@devicefarmer/adbkit|electron)$';

module.exports = {
  forbidden: [
    {
      name: 'no-cycles',
      severity: 'error',
      comment: 'No import cycles anywhere in src/: a cycle means two modules are one concept, or a layer is upside down.',
      from: { path: '^src/' },
      to: { circular: true },
    },
    {
      name: 'fleet-below-services',
      severity: 'error',
      comment: 'fleet/ is hardware behind small interfaces: it knows nothing of services, storage or HTTP.',
      from: { path: `${ENGINE}/fleet/` },
      to: { path: `${ENGINE}/(services|store|api|assistant|events)/` },
    },
    {
      name: 'domain-is-pure',
      severity: 'error',
      comment: 'domain/ holds pure rules: no I/O and no other layer of the engine.',
      from: { path: `${ENGINE}/domain/` },
      to: { path: [`${ENGINE}/(services|store|api|fleet|assistant|events|blobs)/`, IO] },
    },
    {
      name: 'domain-no-io-builtins',
      severity: 'error',
      comment: 'domain/ does no I/O.',
      from: { path: `${ENGINE}/domain/` },
      to: { dependencyTypes: ['core'], path: IO },
    },
    {
      name: 'store-below-services',
      severity: 'error',
      comment: 'store/ reads and writes SQLite; the use cases above it call it, never the other way round.',
      from: { path: `${ENGINE}/store/` },
      to: { path: `${ENGINE}/(services|api|assistant)/` },
    },
    {
      name: 'routes-call-services-not-stores',
      severity: 'error',
      comment: 'Routes parse, validate and authorize, then call a service; only services read and write the stores.',
      from: { path: `${ENGINE}/api/routes/` },
      // Type-only imports too: a route that names a row type has already reached past its service.
      to: { path: `${ENGINE}/store/` },
    },
    {
      name: 'engine-without-electron',
      severity: 'error',
      comment: 'The engine runs headless (npm run serve): nothing in it may need Electron.',
      from: { path: ENGINE },
      to: { path: '^electron$|^src/main/desktop/' },
    },
    {
      name: 'clients-not-into-main',
      severity: 'error',
      comment: 'src/shared, the preload and the renderer are clients of the API: they import nothing from src/main.',
      from: { path: '^src/(shared|preload|renderer)/' },
      to: { path: '^src/main/' },
    },
    {
      name: 'simulators-are-peers',
      severity: 'error',
      comment: 'A simulated phone is a protocol peer: it speaks ADB or usbmuxd, never calls the engine it is tested against.',
      from: { path: '^src/sim/' },
      to: { path: '^src/(main|renderer|preload)/' },
    },
    {
      name: 'protocols-stand-alone',
      severity: 'error',
      comment: 'src/protocols holds wire formats (adb transport and shell v2, usbmuxd and lockdown) written once for the engine and the simulators alike: it imports neither.',
      from: { path: '^src/protocols/' },
      to: { path: '^src/(main|sim|renderer|preload|shared)/' },
    },
    {
      name: 'src-not-into-test',
      severity: 'error',
      comment: 'Product code never depends on test code.',
      from: { path: '^src/' },
      to: { path: '^(test|bench)/' },
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    exclude: { path: '\\.test\\.ts$' },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    enhancedResolveOptions: { exportsFields: ['exports'], conditionNames: ['import', 'require', 'node', 'default', 'types'], extensions: ['.ts', '.tsx', '.js', '.mjs', '.cjs', '.d.ts'] },
  },
};
