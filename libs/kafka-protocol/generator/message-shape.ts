// What every part of the emitter knows of one message: its structs' exported names, the TypeScript
// type and Kafka default of each field, the version conditions of presence, nullability and the
// flexible encoding, and the small text helpers they share.
import {
  intersect,
  isEmpty,
  type FieldSpec,
  type FieldType,
  type MessageSpec,
  type Versions,
} from '../src/message-spec';
import { propertyName } from './naming';
import { versionCondition } from './versions-code';

/** A struct to emit: its exported name, the fields, and the versions it can appear in. */
export interface StructToEmit {
  readonly schemaName: string;
  readonly exportedName: string;
  readonly fields: readonly FieldSpec[];
  readonly about: string;
}

export interface EmitContext {
  readonly message: MessageSpec;
  /** Schema struct name -> exported name (prefixed with the message's when reused elsewhere). */
  readonly structNames: ReadonlyMap<string, string>;
}

/** The structs a message defines, in the order they appear, the message itself first. */
export function structsOf(
  message: MessageSpec,
): { schemaName: string; fields: readonly FieldSpec[]; about: string }[] {
  const structs: { schemaName: string; fields: readonly FieldSpec[]; about: string }[] = [];
  const seen = new Set<string>();
  const visit = (fields: readonly FieldSpec[]): void => {
    for (const field of fields) {
      const name = structNameOf(field.type);
      if (name !== undefined && field.fields !== undefined) {
        if (seen.has(name)) throw new Error(`${message.name}: struct ${name} is defined twice`);
        seen.add(name);
        structs.push({ schemaName: name, fields: field.fields, about: field.about });
        visit(field.fields);
      }
    }
  };
  visit(message.fields);
  for (const common of message.commonStructs) {
    if (seen.has(common.name)) throw new Error(`${message.name}: struct ${common.name} twice`);
    seen.add(common.name);
    structs.push({ schemaName: common.name, fields: common.fields, about: '' });
    visit(common.fields);
  }
  return structs;
}

function structNameOf(type: FieldType): string | undefined {
  if (type.kind === 'struct') return type.name;
  if (type.kind === 'array') return structNameOf(type.element);
  return undefined;
}

/** Whether the field can hold null in some version (its TypeScript type includes null). */
export function typeIsNullable(field: FieldSpec): boolean {
  return (
    !isEmpty(field.nullableVersions) ||
    (field.type.kind === 'primitive' && field.type.name === 'records')
  );
}

export function describeVersions(versions: Versions): string {
  if (isEmpty(versions)) return 'none';
  if (versions.highest === Infinity) return `${versions.lowest}+`;
  return `${versions.lowest}-${versions.highest}`;
}

/** One message as the emitters see it (see the file comment). */
export class MessageShape {
  readonly message: MessageSpec;
  readonly structNames: ReadonlyMap<string, string>;
  /** The versions every condition may assume: the message's valid versions. */
  readonly within: Versions;

  constructor(context: EmitContext) {
    this.message = context.message;
    this.structNames = context.structNames;
    this.within = context.message.validVersions;
  }

  structName(schemaName: string): string {
    if (schemaName === this.message.name) return schemaName;
    const name = this.structNames.get(schemaName);
    if (name === undefined) throw new Error(`${this.message.name}: unknown struct ${schemaName}`);
    return name;
  }

  tsType(type: FieldType): string {
    switch (type.kind) {
      case 'struct':
        return this.structName(type.name);
      case 'array': {
        const element = this.tsType(type.element);
        return element.includes(' ') ? `(${element})[]` : `${element}[]`;
      }
      case 'primitive':
        switch (type.name) {
          case 'bool':
            return 'boolean';
          case 'int64':
            return 'bigint';
          case 'string':
            return 'string';
          case 'uuid':
          case 'bytes':
          case 'records':
            return 'Buffer';
          default:
            return 'number';
        }
    }
  }

  /** Kafka's default for a field, as an expression that allocates a fresh value. */
  defaultExpression(field: FieldSpec): string {
    const text = field.defaultText;
    const nullDefault = text === 'null' && typeIsNullable(field);
    const type = field.type;
    if (type.kind === 'array') return nullDefault ? 'null' : '[]';
    if (type.kind === 'struct')
      return nullDefault ? 'null' : `default${this.structName(type.name)}()`;
    switch (type.name) {
      case 'bool':
        return text === 'true' ? 'true' : 'false';
      case 'int8':
      case 'int16':
      case 'uint16':
      case 'int32':
      case 'uint32':
        return text === undefined ? '0' : String(Number(parseInteger(text, field.name)));
      case 'int64':
        return text === undefined ? '0n' : `${parseInteger(text, field.name)}n`;
      case 'float64':
        return text === undefined ? '0' : String(Number(text));
      case 'string':
        return nullDefault ? 'null' : JSON.stringify(text ?? '');
      case 'uuid':
        return 'Buffer.alloc(16)';
      case 'bytes':
        return nullDefault ? 'null' : 'Buffer.alloc(0)';
      case 'records':
        return 'null';
    }
  }

  /** An expression that is true when `value` differs from the field's default. */
  nonDefaultCondition(field: FieldSpec, value: string): string {
    const defaultValue = this.defaultExpression(field);
    const type = field.type;
    if (defaultValue === 'null') return `${value} !== null`;
    if (type.kind === 'array') {
      return typeIsNullable(field)
        ? `(${value} === null || ${value}.length !== 0)`
        : `${value}.length !== 0`;
    }
    if (type.kind === 'struct') {
      const check = `!isDefault${this.structName(type.name)}(${value})`;
      return typeIsNullable(field) ? `(${value} === null || ${check})` : check;
    }
    switch (type.name) {
      case 'uuid':
        return `!isZeroUuid(${value})`;
      case 'bytes':
        return typeIsNullable(field)
          ? `(${value} === null || ${value}.length !== 0)`
          : `${value}.length !== 0`;
      case 'float64':
        return `!Object.is(${value}, ${defaultValue})`;
      default:
        return `${value} !== ${defaultValue}`;
    }
  }

  flexibleCondition(): string {
    return versionCondition(this.message.flexibleVersions, this.within);
  }

  /** The expression for whether a field is written in the flexible encoding. */
  fieldFlexible(field: FieldSpec): string {
    if (field.flexibleVersions !== undefined) {
      return versionCondition(
        intersect(field.flexibleVersions, this.message.flexibleVersions),
        this.within,
      );
    }
    const flexible = this.flexibleCondition();
    return flexible === 'true' || flexible === 'false' ? flexible : 'flexible';
  }

  label(struct: StructToEmit, field: FieldSpec): string {
    return `'${struct.exportedName}.${propertyName(field.name)}'`;
  }

  functionName(struct: StructToEmit, verb: 'read' | 'write'): string {
    return struct.exportedName === this.message.name
      ? `${verb}${struct.exportedName}Struct`
      : `${verb}${struct.exportedName}`;
  }
}

/** A parameter (`reader`, `version`...) that a function's body never reads gets a `_` prefix. */
export function markUnusedParameters(lines: string[]): string[] {
  const body = lines
    .slice(1)
    .map((line) => line.replace(/'[^']*'/g, "''"))
    .join('\n');
  let signature = lines[0]!;
  for (const parameter of ['reader', 'writer', 'message', 'version']) {
    if (!new RegExp(`(?<![$\\w.])${parameter}\\b(?!:)`).test(body)) {
      signature = signature
        .replace(`(${parameter}: `, `(_${parameter}: `)
        .replace(` ${parameter}: `, ` _${parameter}: `);
    }
  }
  return [signature, ...lines.slice(1)];
}

export function lowerFirst(name: string): string {
  return name.charAt(0).toLowerCase() + name.slice(1);
}

export function escapeComment(text: string): string {
  return text.replace(/\*\//g, '* /');
}

/** An integer default as Kafka writes them: decimal, 0x hex or 0-prefixed octal, maybe negative. */
function parseInteger(text: string, context: string): bigint {
  const match = /^(-?)(0x[0-9a-fA-F]+|0[0-7]+|\d+)$/.exec(text.trim());
  if (!match) throw new Error(`${context}: default '${text}' is not an integer`);
  const digits = match[2]!;
  const magnitude = digits.startsWith('0x')
    ? BigInt(digits)
    : digits.length > 1 && digits.startsWith('0')
      ? BigInt(`0o${digits.slice(1)}`)
      : BigInt(digits);
  return match[1] === '-' ? -magnitude : magnitude;
}
