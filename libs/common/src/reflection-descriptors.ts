import { readFileSync } from 'node:fs';
import * as path from 'node:path';
import * as protoLoader from '@grpc/proto-loader';
import {
  FileDescriptorProto,
  type IDescriptorProto,
  type IFileDescriptorProto,
} from 'protobufjs/ext/descriptor';
import { protoPath as healthProtoPath } from 'grpc-health-check';

/**
 * The descriptors server reflection serves: the standard services every Spool process runs
 * (grpc.health.v1.Health and grpc.reflection.v1 / v1alpha ServerReflection, from the .proto files
 * their packages ship) and the service's own FileDescriptorSets (compiled by buf).
 *
 * proto-loader turns a .proto into descriptors through protobufjs, which names a map field's
 * implicit entry message after the field ("Statuses") where protoc and every other runtime
 * expect the field's name in CamelCase plus "Entry" ("StatusesEntry"). Go's protobuf refuses
 * such a descriptor ("incorrect implicit map entry name"), so grpcurl could not describe or call
 * the health service; repairMapEntryNames renames the entries as protoc would.
 */

const reflectionProtoRoot = path.join(
  path.dirname(require.resolve('@grpc/reflection/package.json')),
  'build/proto',
);

/** The standard services' full names, listed by reflection beside the service's own. */
export const standardServiceNames: readonly string[] = [
  'grpc.health.v1.Health',
  'grpc.reflection.v1.ServerReflection',
  'grpc.reflection.v1alpha.ServerReflection',
];

export function loadReflectionDescriptors(
  descriptorSetPaths: readonly string[],
): protoLoader.PackageDefinition {
  const options = { longs: String, enums: String, defaults: true, oneofs: true };
  let definition: protoLoader.PackageDefinition = {};
  for (const protoFile of [
    healthProtoPath,
    path.join(reflectionProtoRoot, 'grpc/reflection/v1/reflection.proto'),
    path.join(reflectionProtoRoot, 'grpc/reflection/v1alpha/reflection.proto'),
  ]) {
    definition = {
      ...definition,
      ...repairMapEntryNames(protoLoader.loadSync(protoFile, options)),
    };
  }
  for (const descriptorSetPath of descriptorSetPaths) {
    definition = {
      ...definition,
      ...protoLoader.loadFileDescriptorSetFromBuffer(readFileSync(descriptorSetPath), options),
    };
  }
  return definition;
}

/** Renames protobufjs's map entry messages as protoc names them, in every file descriptor. */
export function repairMapEntryNames(
  definition: protoLoader.PackageDefinition,
): protoLoader.PackageDefinition {
  const repaired = new Map<Buffer, Buffer>();
  const repair = (bytes: Buffer): Buffer => {
    let encoded = repaired.get(bytes);
    if (encoded === undefined) {
      const file = FileDescriptorProto.decode(bytes) as IFileDescriptorProto;
      for (const message of file.messageType ?? []) renameMapEntries(message);
      encoded = Buffer.from(FileDescriptorProto.encode(file).finish());
      repaired.set(bytes, encoded);
    }
    return encoded;
  };
  const result: protoLoader.PackageDefinition = {};
  for (const [name, entry] of Object.entries(definition)) {
    const files = (entry as { fileDescriptorProtos?: Buffer[] }).fileDescriptorProtos;
    result[name] = Array.isArray(files)
      ? ({ ...entry, fileDescriptorProtos: files.map(repair) } as typeof entry)
      : entry;
  }
  return result;
}

function renameMapEntries(message: IDescriptorProto): void {
  for (const nested of message.nestedType ?? []) renameMapEntries(nested);
  for (const nested of message.nestedType ?? []) {
    if (nested.options?.mapEntry !== true) continue;
    const field = (message.field ?? []).find((candidate) => candidate.typeName === nested.name);
    if (field?.name === undefined) continue;
    const entryName = `${camelCase(field.name)}Entry`;
    field.typeName = entryName;
    nested.name = entryName;
  }
}

/** protoc's ToCamelCase for a map entry: "statuses" → "Statuses", "max_bytes" → "MaxBytes". */
function camelCase(fieldName: string): string {
  return fieldName
    .split('_')
    .map((part) => part.charAt(0).toUpperCase() + part.slice(1))
    .join('');
}
