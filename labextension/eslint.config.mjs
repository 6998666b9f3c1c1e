// ESLint flat config: `jlpm lint` (check) and `jlpm lint:fix`. typescript-eslint's
// recommended rules on the panel's sources; formatting is Prettier's job (.prettierrc.json),
// so eslint-config-prettier turns off the rules that would fight it.
import js from '@eslint/js';
import prettier from 'eslint-config-prettier';
import globals from 'globals';
import reactHooks from 'eslint-plugin-react-hooks';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  { ignores: ['lib/', 'node_modules/', '.yarn/', '../jupyter_aaep/labextension/'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    files: ['src/**/*.{ts,tsx}'],
    languageOptions: { globals: globals.browser },
    plugins: { 'react-hooks': reactHooks },
    rules: {
      ...reactHooks.configs.recommended.rules,
      // JupyterLab's own convention: `namespace CommandIDs` and `namespace Private` beside the code.
      '@typescript-eslint/no-namespace': 'off',
      // Unused arguments named _x are deliberate (signal handlers, callbacks).
      '@typescript-eslint/no-unused-vars': ['error', { args: 'none', varsIgnorePattern: '^_' }]
    }
  },
  {
    files: ['test/**/*.mjs', 'scripts/**/*.mjs', '*.mjs'],
    languageOptions: { globals: globals.node }
  },
  prettier
);
