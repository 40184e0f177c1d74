// Lint for the whole workspace. The module-boundary rules are the architecture in executable
// form: apps depend only on libs, the client SDK never reaches into storage or metadata, the
// base libraries (protocol, record-batch, common) depend on nothing of ours but the error
// catalog, and the storage engine needs the record format, not the gRPC wire formats.
import nx from '@nx/eslint-plugin';
import tseslint from 'typescript-eslint';

/** A path below a package name, other than its manifest or its testing entry. */
const deepImport = {
  regex: '^@spool/[^/]+/(?!package\\.json$|testing$).+',
  message: 'Import another project only through its package name (src/index.ts).',
};
/** Test code, which production code must not import: it is left out of builds and the image. */
const testCodeImports = [
  {
    regex: '^@spool/[^/]+/testing$',
    message:
      'A testing entry point (@spool/<lib>/testing) is for specs and test/ only, not production code.',
  },
  {
    regex: '^\\.{1,2}/(?:.*/)?testing(?:/|$)',
    message: 'A src/testing/ folder is for specs and test code only, not production code.',
  },
];
/** Files allowed to import test code: specs, the cross-process tests and test code itself. */
const testCodeFiles = ['**/*.spec.ts', 'test/**/*.ts', '**/src/testing/**/*.ts'];

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
            // Shared libs serve every scope; the base ones among them (protocol, record-batch,
            // common) depend only on the root (errors, the catalog of error codes), which depends
            // on nothing of ours; the other shared libs depend only on the base ones.
            { sourceTag: 'layer:base', onlyDependOnLibsWithTags: ['layer:root'] },
            { sourceTag: 'layer:root', onlyDependOnLibsWithTags: [] },
            { sourceTag: 'scope:shared', onlyDependOnLibsWithTags: ['layer:base'] },
            {
              sourceTag: 'scope:client',
              onlyDependOnLibsWithTags: ['scope:client', 'scope:shared'],
            },
            { sourceTag: 'scope:data', onlyDependOnLibsWithTags: ['scope:data', 'scope:shared'] },
            // The storage engine reads and writes the record format (record-batch), never the
            // services' wire formats: protocol holds the generated gRPC code and brings grpc-js.
            { sourceTag: 'concern:storage', notDependOnLibsWithTags: ['concern:rpc'] },
            {
              sourceTag: 'scope:control',
              onlyDependOnLibsWithTags: ['scope:control', 'scope:shared'],
            },
          ],
        },
      ],
      // Each project exports only through src/index.ts; a path below a package name reaches
      // around that list. Test code (a library's testing entry, any src/testing/ folder) is
      // for specs, test/ and other test code only (the override below), never production code.
      'no-restricted-imports': ['error', { patterns: [deepImport, ...testCodeImports] }],
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
  {
    files: testCodeFiles,
    rules: { 'no-restricted-imports': ['error', { patterns: [deepImport] }] },
  },
);
