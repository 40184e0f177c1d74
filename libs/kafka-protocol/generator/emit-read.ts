// Emits each struct's reader: fields read into locals in wire order, the object built once with
// every property present (one shape per struct), then the tagged fields of flexible versions.
import { intersect, type FieldSpec, type FieldType } from '../src/message-spec';
import {
  markUnusedParameters,
  typeIsNullable,
  type MessageShape,
  type StructToEmit,
} from './message-shape';
import { propertyName } from './naming';
import { versionCondition } from './versions-code';

/** An expression reading one value of a primitive or struct type (never an array). */
function readValue(
  shape: MessageShape,
  type: FieldType,
  nullable: string,
  flexible: string,
  label: string,
): string {
  if (type.kind === 'array') throw new Error('arrays are read by statements');
  if (type.kind === 'struct') {
    const read = `read${shape.structName(type.name)}(reader, version)`;
    if (nullable === 'false') return read;
    const present = `reader.readStructPresent(${label}) ? ${read} : null`;
    return nullable === 'true' ? present : `(${nullable} ? (${present}) : ${read})`;
  }
  switch (type.name) {
    case 'bool':
      return `reader.readBool(${label})`;
    case 'int8':
      return `reader.readInt8(${label})`;
    case 'int16':
      return `reader.readInt16(${label})`;
    case 'uint16':
      return `reader.readUint16(${label})`;
    case 'int32':
      return `reader.readInt32(${label})`;
    case 'uint32':
      return `reader.readUint32(${label})`;
    case 'int64':
      return `reader.readInt64(${label})`;
    case 'float64':
      return `reader.readFloat64(${label})`;
    case 'uuid':
      return `reader.readUuid(${label})`;
    case 'string':
    case 'bytes':
    case 'records': {
      const kind = type.name === 'string' ? 'String' : 'Bytes';
      const nullableMethod = type.name === 'records' ? 'Records' : `Nullable${kind}`;
      const nullableRead = `reader.read${nullableMethod}(${label}, ${flexible})`;
      const plainRead = `reader.read${kind}(${label}, ${flexible})`;
      if (nullable === 'true') return nullableRead;
      if (nullable === 'false') return plainRead;
      return `(${nullable} ? ${nullableRead} : ${plainRead})`;
    }
  }
}

/** Statements that read a field's value into `target`. */
function readInto(
  shape: MessageShape,
  field: FieldSpec,
  target: string,
  label: string,
  indent: string,
): string[] {
  const nullable = versionCondition(field.nullableVersions, shape.within);
  const flexible = shape.fieldFlexible(field);
  const type = field.type;
  if (type.kind !== 'array') {
    return [`${indent}${target} = ${readValue(shape, type, nullable, flexible, label)};`];
  }
  const elementType = shape.tsType(type.element);
  const element = readValue(shape, type.element, 'false', flexible, label);
  const fill = [
    `const elements: ${elementType}[] = [];`,
    `for (let index = 0; index < length; index++) elements.push(${element});`,
    `${target} = elements;`,
  ];
  if (nullable === 'false') {
    return [
      `${indent}{`,
      `${indent}  const length = reader.readArrayLength(${label}, ${flexible}, false);`,
      ...fill.map((line) => `${indent}  ${line}`),
      `${indent}}`,
    ];
  }
  return [
    `${indent}{`,
    `${indent}  const length = reader.readArrayLength(${label}, ${flexible}, ${nullable});`,
    `${indent}  if (length < 0) {`,
    `${indent}    ${target} = null;`,
    `${indent}  } else {`,
    ...fill.map((line) => `${indent}    ${line}`),
    `${indent}  }`,
    `${indent}}`,
  ];
}

/**
 * A struct's reader: its fields in wire order into locals, the object built once, then (in
 * flexible versions) the tagged fields, unknown tags skipped.
 */
export function emitRead(shape: MessageShape, struct: StructToEmit): string[] {
  const name = struct.exportedName;
  const flexible = shape.flexibleCondition();
  const lines = [
    `function ${shape.functionName(struct, 'read')}(reader: KafkaReader, version: number): ${name} {`,
  ];
  if (flexible !== 'false') lines.push(`  const flexible = ${flexible};`);
  lines.push(...emitReadFields(shape, struct), `  const message: ${name} = {`);
  for (const field of struct.fields) {
    const property = propertyName(field.name);
    lines.push(
      field.tag === undefined
        ? `    ${property}: $${property},`
        : `    ${property}: ${shape.defaultExpression(field)},`,
    );
  }
  lines.push('  };');
  if (flexible !== 'false') lines.push(...emitReadTaggedFields(shape, struct));
  lines.push('  return message;', '}');
  return markUnusedParameters(lines);
}

/** Each untagged field into a local `$field`: read when the version has it, else its default. */
function emitReadFields(shape: MessageShape, struct: StructToEmit): string[] {
  const lines: string[] = [];
  for (const field of struct.fields) {
    if (field.tag !== undefined) continue;
    const local = `$${propertyName(field.name)}`;
    const type = shape.tsType(field.type) + (typeIsNullable(field) ? ' | null' : '');
    const present = versionCondition(field.versions, shape.within);
    const label = shape.label(struct, field);
    if (present === 'true' && field.type.kind !== 'array') {
      lines.push(...readInto(shape, field, `const ${local}: ${type}`, label, '  '));
    } else if (present === 'true') {
      lines.push(`  let ${local}: ${type};`, ...readInto(shape, field, local, label, '  '));
    } else {
      lines.push(`  let ${local}: ${type} = ${shape.defaultExpression(field)};`);
      if (present !== 'false') {
        lines.push(`  if (${present}) {`, ...readInto(shape, field, local, label, '    '), '  }');
      }
    }
  }
  return lines;
}

/** The tagged field section: each known tag read into the message, checked against its size. */
function emitReadTaggedFields(shape: MessageShape, struct: StructToEmit): string[] {
  const name = struct.exportedName;
  const tagged = struct.fields
    .filter((field) => field.tag !== undefined)
    .sort((left, right) => left.tag! - right.tag!);
  const lines = [
    '  if (flexible) {',
    `    const taggedFieldCount = reader.readUnsignedVarint('${name} tagged fields');`,
    '    for (let index = 0; index < taggedFieldCount; index++) {',
    tagged.length === 0
      ? `      reader.readUnsignedVarint('${name} tag');`
      : `      const tag = reader.readUnsignedVarint('${name} tag');`,
    `      const sizeBytes = reader.readUnsignedVarint('${name} tagged field size');`,
  ];
  if (tagged.length === 0) {
    lines.push(`      reader.skip(sizeBytes, '${name} unknown tagged field');`);
    lines.push('    }', '  }');
    return lines;
  }
  lines.push('      const start = reader.position;', '      switch (tag) {');
  for (const field of tagged) {
    const present = versionCondition(intersect(field.versions, field.taggedVersions), shape.within);
    const label = shape.label(struct, field);
    const target = `message.${propertyName(field.name)}`;
    const read = readInto(shape, field, target, label, '            ');
    lines.push(`        case ${field.tag}:`);
    if (present === 'true') {
      lines.push(...read.map((line) => line.slice(2)));
    } else {
      lines.push(
        `          if (${present}) {`,
        ...read,
        '          } else {',
        `            reader.skip(sizeBytes, ${label});`,
        '          }',
      );
    }
    lines.push(`          reader.endTaggedField(start, sizeBytes, ${label});`, '          break;');
  }
  lines.push(
    '        default:',
    `          reader.skip(sizeBytes, '${name} unknown tagged field');`,
    '      }',
    '    }',
    '  }',
  );
  return lines;
}
