// Emits each struct's writer: Kafka's rules for fields the version lacks (their default, or
// UNSUPPORTED_VERSION unless ignorable), null where the version does not allow it, and tagged
// fields in tag order, each only when it holds a value other than its default.
import { intersect, type FieldSpec, type FieldType } from '../src/message-spec';
import {
  markUnusedParameters,
  typeIsNullable,
  type MessageShape,
  type StructToEmit,
} from './message-shape';
import { propertyName } from './naming';
import { versionCondition } from './versions-code';

/**
 * Statements writing one value (never an array) held in `value`. `nullable` is 'never' when the
 * value's type has no null, else the condition under which null may be written.
 */
function writeValue(
  shape: MessageShape,
  type: FieldType,
  value: string,
  nullable: string,
  flexible: string,
  label: string,
  indent: string,
  writer: string,
): string[] {
  if (type.kind === 'array') throw new Error('arrays are written by writeField');
  const nullCheck =
    nullable === 'never' || nullable === 'true'
      ? []
      : [
          `${indent}if (${value} === null${nullable === 'false' ? '' : ` && !(${nullable})`}) throw nullFieldError(${label}, version);`,
        ];
  if (type.kind === 'struct') {
    const write = `write${shape.structName(type.name)}(${writer}, ${value}, version);`;
    if (nullable === 'never') return [`${indent}${write}`];
    const withMarker = [
      `if (${value} === null) {`,
      `  ${writer}.writeInt8(-1);`,
      `} else {`,
      `  ${writer}.writeInt8(1);`,
      `  ${write}`,
      `}`,
    ];
    const withoutMarker = [
      `if (${value} === null) throw nullFieldError(${label}, version);`,
      write,
    ];
    if (nullable === 'true') return withMarker.map((line) => indent + line);
    if (nullable === 'false') return withoutMarker.map((line) => indent + line);
    return [
      `${indent}if (${nullable}) {`,
      ...withMarker.map((line) => `${indent}  ${line}`),
      `${indent}} else {`,
      ...withoutMarker.map((line) => `${indent}  ${line}`),
      `${indent}}`,
    ];
  }
  switch (type.name) {
    case 'bool':
      return [`${indent}${writer}.writeBool(${value});`];
    case 'int8':
      return [`${indent}${writer}.writeInt8(${value});`];
    case 'int16':
      return [`${indent}${writer}.writeInt16(${value});`];
    case 'uint16':
      return [`${indent}${writer}.writeUint16(${value});`];
    case 'int32':
      return [`${indent}${writer}.writeInt32(${value});`];
    case 'uint32':
      return [`${indent}${writer}.writeUint32(${value});`];
    case 'int64':
      return [`${indent}${writer}.writeInt64(${value});`];
    case 'float64':
      return [`${indent}${writer}.writeFloat64(${value});`];
    case 'uuid':
      return [`${indent}${writer}.writeUuid(${value}, ${label});`];
    case 'string':
    case 'bytes':
    case 'records': {
      const kind = type.name === 'string' ? 'String' : 'Bytes';
      const method =
        type.name === 'records' ? 'Records' : nullable === 'never' ? kind : `Nullable${kind}`;
      return [...nullCheck, `${indent}${writer}.write${method}(${value}, ${flexible}, ${label});`];
    }
  }
}

function writeField(
  shape: MessageShape,
  field: FieldSpec,
  value: string,
  label: string,
  indent: string,
  writer: string,
): string[] {
  const nullable = typeIsNullable(field)
    ? versionCondition(field.nullableVersions, shape.within)
    : 'never';
  const flexible = shape.fieldFlexible(field);
  const type = field.type;
  if (type.kind !== 'array')
    return writeValue(shape, type, value, nullable, flexible, label, indent, writer);
  const lines: string[] = [];
  if (nullable !== 'never') {
    lines.push(`${indent}if (${value} === null) {`);
    if (nullable !== 'true')
      lines.push(`${indent}  if (!(${nullable})) throw nullFieldError(${label}, version);`);
    lines.push(`${indent}  ${writer}.writeArrayLength(-1, ${flexible});`, `${indent}} else {`);
  } else {
    lines.push(`${indent}{`);
  }
  lines.push(
    `${indent}  const elements = ${value};`,
    `${indent}  ${writer}.writeArrayLength(elements.length, ${flexible});`,
    `${indent}  for (let index = 0; index < elements.length; index++) {`,
    ...writeValue(
      shape,
      type.element,
      'elements[index]!',
      'never',
      flexible,
      label,
      `${indent}    `,
      writer,
    ),
    `${indent}  }`,
    `${indent}}`,
  );
  return lines;
}

/**
 * A struct's writer: its untagged fields in order (a field the version lacks checked for its
 * default instead), then in flexible versions the tagged field section.
 */
export function emitWrite(shape: MessageShape, struct: StructToEmit): string[] {
  const name = struct.exportedName;
  const flexible = shape.flexibleCondition();
  const lines = [
    `function ${shape.functionName(struct, 'write')}(writer: KafkaWriter, message: ${name}, version: number): void {`,
  ];
  if (flexible !== 'false') lines.push(`  const flexible = ${flexible};`);
  lines.push(...emitWriteFields(shape, struct));
  if (flexible !== 'false') lines.push(...emitWriteTaggedFields(shape, struct));
  lines.push(...emitAbsentTaggedFieldChecks(shape, struct, flexible !== 'false'), '}');
  return markUnusedParameters(lines);
}

function taggedFieldsOf(struct: StructToEmit): FieldSpec[] {
  return struct.fields
    .filter((field) => field.tag !== undefined)
    .sort((left, right) => left.tag! - right.tag!);
}

function emitWriteFields(shape: MessageShape, struct: StructToEmit): string[] {
  const lines: string[] = [];
  for (const field of struct.fields) {
    if (field.tag !== undefined) continue;
    const value = `message.${propertyName(field.name)}`;
    const label = shape.label(struct, field);
    const present = versionCondition(field.versions, shape.within);
    const absentCheck = field.ignorable
      ? []
      : [
          `if (${shape.nonDefaultCondition(field, value)}) throw unsupportedFieldError(${label}, version);`,
        ];
    if (present === 'true') {
      lines.push(...writeField(shape, field, value, label, '  ', 'writer'));
    } else if (present === 'false') {
      lines.push(...absentCheck.map((line) => `  ${line}`));
    } else {
      lines.push(
        `  if (${present}) {`,
        ...writeField(shape, field, value, label, '    ', 'writer'),
      );
      if (absentCheck.length > 0) {
        lines.push('  } else {', ...absentCheck.map((line) => `    ${line}`));
      }
      lines.push('  }');
    }
  }
  return lines;
}

/**
 * The tagged field section: the count of tagged fields that the version has and that hold a value
 * other than their default, then each of them as tag, size and value (written to a small scratch
 * writer first, to learn its size).
 */
function emitWriteTaggedFields(shape: MessageShape, struct: StructToEmit): string[] {
  const tagged = taggedFieldsOf(struct);
  if (tagged.length === 0) return ['  if (flexible) writer.writeUnsignedVarint(0);'];
  const lines = ['  if (flexible) {', '    let taggedFieldCount = 0;'];
  for (const field of tagged) {
    const present = versionCondition(intersect(field.versions, field.taggedVersions), shape.within);
    const value = `message.${propertyName(field.name)}`;
    const condition =
      present === 'true'
        ? shape.nonDefaultCondition(field, value)
        : `${present} && ${shape.nonDefaultCondition(field, value)}`;
    lines.push(
      `    const write${field.tag} = ${condition};`,
      `    if (write${field.tag}) taggedFieldCount++;`,
    );
  }
  lines.push('    writer.writeUnsignedVarint(taggedFieldCount);');
  for (const field of tagged) {
    const value = `message.${propertyName(field.name)}`;
    lines.push(
      `    if (write${field.tag}) {`,
      `      writer.writeUnsignedVarint(${field.tag});`,
      '      const tagged = new KafkaWriter({ initialSizeBytes: 64 });',
      ...writeField(shape, field, value, shape.label(struct, field), '      ', 'tagged'),
      '      writer.writeUnsignedVarint(tagged.sizeBytes);',
      '      writer.writeWriter(tagged);',
      '    }',
    );
  }
  lines.push('  }');
  return lines;
}

/** Tagged fields the version lacks: Kafka refuses to drop one that holds a non-default value. */
function emitAbsentTaggedFieldChecks(
  shape: MessageShape,
  struct: StructToEmit,
  flexibleSomewhere: boolean,
): string[] {
  const lines: string[] = [];
  for (const field of taggedFieldsOf(struct)) {
    if (field.ignorable) continue;
    const present = flexibleSomewhere
      ? versionCondition(intersect(field.versions, field.taggedVersions), shape.within)
      : 'false';
    if (present === 'true') continue;
    const value = `message.${propertyName(field.name)}`;
    const nonDefault = shape.nonDefaultCondition(field, value);
    const condition = present === 'false' ? nonDefault : `!(${present}) && ${nonDefault}`;
    lines.push(
      `  if (${condition}) throw unsupportedFieldError(${shape.label(struct, field)}, version);`,
    );
  }
  return lines;
}
