import js from '@eslint/js';
import globals from 'globals';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  { ignores: ['out/**', 'node_modules/**'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    languageOptions: { globals: { ...globals.node, ...globals.browser } },
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
    },
  },
  {
    // Tests read arbitrary JSON replies; typing every body would add noise, not safety.
    files: ['test/**/*.ts', 'src/**/*.test.ts'],
    rules: { '@typescript-eslint/no-explicit-any': 'off' },
  },
  {
    // A page's navigation is cancelled when the test machine's network changes: the GUI tests navigate through open()
    // in test/e2e/support/browser.ts, which asks again.
    files: ['test/e2e/**/*.ts'],
    ignores: ['test/e2e/support/browser.ts'],
    rules: {
      'no-restricted-syntax': ['error', { selector: "CallExpression[callee.property.name='goto']", message: "Navigate with open(page, url) from './support/browser.js': it asks again when the test machine's network changed." }],
    },
  },
);
