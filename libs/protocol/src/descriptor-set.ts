import * as path from 'node:path';

/**
 * Where the compiled FileDescriptorSet of proto/ lives (written by `buf build` beside the
 * generated code). Servers load it for gRPC server reflection, so `grpcurl list` works against
 * any Spool process without a copy of the .proto files.
 */
export const protoDescriptorSetPath: string = path.join(
  __dirname,
  __filename.endsWith('.ts') ? 'generated' : '../src/generated',
  'spool.binpb',
);
