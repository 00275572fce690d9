// `npm test`: the test suite, with the typecheck and the lint run beside it at the lowest CPU priority. On the 2-core
// build machine the suite leaves a core idle for about a fifth of its run (its tests wait on phones, Appium and the
// browser), and the two checks need about 50 s of CPU: run first, they were 40 s of wall time before the first test;
// at nice 19 they take only what the suite leaves (CFS gives a nice-19 process 1/70 of a busy core's time). Their
// output is printed whole after the tests' own, each with its result; any failure fails `npm test`.
// Arguments go to vitest: `npm test -- test/api` runs that folder, with the checks beside it as always.
import { spawn } from 'node:child_process';
import { setPriority } from 'node:os';
import { fileURLToPath } from 'node:url';

const VITEST = fileURLToPath(new URL('../node_modules/vitest/vitest.mjs', import.meta.url));

const LOWEST = 19;
const checks = [
  ['typecheck', 'npm', ['run', '--silent', 'typecheck']],
  ['lint', 'npm', ['run', '--silent', 'lint']],
];

const run = (command, args, options) => new Promise((resolve) => {
  const child = spawn(command, args, options);
  resolve({ child, done: new Promise((exited) => {
    child.on('error', (error) => exited({ code: 1, error }));
    child.on('close', (code) => exited({ code: code ?? 1 }));
  }) });
});

const checked = checks.map(async ([name, command, args]) => {
  const started = Date.now();
  const { child, done } = await run(command, args, { stdio: ['ignore', 'pipe', 'pipe'] });
  // The child's own children (tsc, eslint) inherit its priority.
  if (child.pid !== undefined) setPriority(child.pid, LOWEST);
  let output = '';
  child.stdout.on('data', (chunk) => (output += chunk));
  child.stderr.on('data', (chunk) => (output += chunk));
  const { code, error } = await done;
  return { name, code, output: error ? `${output}${error.message}\n` : output, seconds: (Date.now() - started) / 1000 };
});

const { done: tested } = await run(process.execPath, [VITEST, 'run', ...process.argv.slice(2)], { stdio: 'inherit' });
const { code: testCode } = await tested;
const results = await Promise.all(checked);
for (const { name, code, output, seconds } of results) {
  process.stdout.write(`\n> npm run ${name} (beside the tests, at nice ${LOWEST}): ${code === 0 ? 'passed' : `failed (exit ${code})`} in ${seconds.toFixed(0)} s\n${output}`);
}
process.exit(testCode !== 0 || results.some((r) => r.code !== 0) ? 1 : 0);
