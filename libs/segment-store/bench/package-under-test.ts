// The package the benchmark measures, imported by its name so that Node loads the built dist/
// (the `build` target runs first) exactly as other projects do, and not the TypeScript sources.
// nx's module-boundary rule wants relative imports inside a project; relative imports would
// compile the sources into the benchmark instead, so this one file is exempt.
// eslint-disable-next-line @nx/enforce-module-boundaries -- measure the built package, see above
export * from '@spool/segment-store';
