// Lint for the whole workspace. The module-boundary rules are the architecture in executable
// form: apps depend only on libs, the client SDK never reaches into storage or metadata, and the
// base libraries (protocol, common) depend on nothing of ours but the error catalog.
import nx from '@nx/eslint-plugin';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  {
    ignores: [
      '**/dist/**',
      '**/build/**',
      '**/node_modules/**',
      '**/.nx/**',
      '**/src/generated/**',
      'test/fixtures/lint/**',
    ],
  },
  ...tseslint.configs.recommended,
  {
    files: ['**/*.ts'],
    plugins: { '@nx': nx },
    rules: {
      '@nx/enforce-module-boundaries': [
        'error',
        {
          allow: [],
          depConstraints: [
            { sourceTag: 'type:app', onlyDependOnLibsWithTags: ['type:lib'] },
            { sourceTag: 'type:lib', onlyDependOnLibsWithTags: ['type:lib'] },
            // Shared libs serve every scope; the base ones among them (protocol, common) depend
            // only on the root (errors, the catalog of error codes), which depends on nothing of
            // ours; the other shared libs depend only on the base ones.
            { sourceTag: 'layer:base', onlyDependOnLibsWithTags: ['layer:root'] },
            { sourceTag: 'layer:root', onlyDependOnLibsWithTags: [] },
            { sourceTag: 'scope:shared', onlyDependOnLibsWithTags: ['layer:base'] },
            {
              sourceTag: 'scope:client',
              onlyDependOnLibsWithTags: ['scope:client', 'scope:shared'],
            },
            { sourceTag: 'scope:data', onlyDependOnLibsWithTags: ['scope:data', 'scope:shared'] },
            {
              sourceTag: 'scope:control',
              onlyDependOnLibsWithTags: ['scope:control', 'scope:shared'],
            },
          ],
        },
      ],
      // Each project exports only through src/index.ts; a path below a package name reaches
      // around that list.
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            {
              regex: '^@spool/[^/]+/(?!package\\.json$).+',
              message: 'Import another project only through its package name (src/index.ts).',
            },
          ],
        },
      ],
      '@typescript-eslint/no-unused-vars': [
        'error',
        { argsIgnorePattern: '^_', varsIgnorePattern: '^_', caughtErrors: 'none' },
      ],
      '@typescript-eslint/consistent-type-imports': 'error',
      eqeqeq: ['error', 'always'],
      'no-console': 'off',
    },
  },
  {
    files: ['**/*.spec.ts', 'test/**/*.ts'],
    rules: { '@typescript-eslint/no-non-null-assertion': 'off' },
  },
);
