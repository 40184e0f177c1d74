import { createRequire } from 'node:module';
import { RecordBatchError, RecordBatchErrorCode } from '../errors';

/**
 * Loads a compression package the first time a batch needs it, not when the SDK is imported: an
 * application that never uses zstd runs even where zstd's native binary cannot load. A package
 * that fails to load is reported on each use as UNSUPPORTED_COMPRESSION_TYPE, naming the package
 * and the loader's reason, so the error says what to install or which platform lacks a binary.
 */
export type PackageLoader<Module> = () => Module;

export function lazyPackage<Module>(codecName: string, packageName: string): PackageLoader<Module> {
  let loaded: { readonly module: Module } | { readonly error: unknown } | undefined;
  return () => {
    loaded ??= loadOnce<Module>(packageName);
    if ('error' in loaded) {
      const reason = loaded.error instanceof Error ? loaded.error.message : String(loaded.error);
      throw new RecordBatchError(
        RecordBatchErrorCode.UnsupportedCompressionType,
        `compression ${codecName} needs the package ${packageName}, which failed to load ` +
          `here (${process.platform}-${process.arch}, Node ${process.versions.node}): ${reason}`,
        { cause: loaded.error },
      );
    }
    return loaded.module;
  };
}

function loadOnce<Module>(packageName: string): { module: Module } | { error: unknown } {
  try {
    return { module: createRequire(__filename)(packageName) as Module };
  } catch (error) {
    return { error };
  }
}
