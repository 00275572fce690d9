// `npm test` begins with the typecheck and the lint, run side by side: each takes one core for about a minute, and
// one after the other they left the second core idle. Each one's output is printed whole when it ends, in turn.
import { spawn } from 'node:child_process';

const checks = [
  ['typecheck', 'npm', ['run', '--silent', 'typecheck']],
  ['lint', 'npm', ['run', '--silent', 'lint']],
];

const results = await Promise.all(
  checks.map(([name, command, args]) => new Promise((resolve) => {
    const started = Date.now();
    const child = spawn(command, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout.on('data', (chunk) => (output += chunk));
    child.stderr.on('data', (chunk) => (output += chunk));
    child.on('error', (error) => resolve({ name, code: 1, output: `${output}${error.message}\n`, seconds: 0 }));
    child.on('close', (code) => resolve({ name, code: code ?? 1, output, seconds: (Date.now() - started) / 1000 }));
  })),
);
for (const { name, code, output, seconds } of results) {
  process.stdout.write(`\n> npm run ${name}: ${code === 0 ? 'passed' : `failed (exit ${code})`} in ${seconds.toFixed(0)} s\n${output}`);
}
process.exit(results.some((r) => r.code !== 0) ? 1 : 0);
