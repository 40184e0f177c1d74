// Random messages of any schema and version, and Kafka's JSON form of them (the form its
// generated *JsonConverter classes read), for tests that compare the generated codecs with Kafka's
// own serializers. Built from the schemas themselves, independently of the generator: a default
// or a version condition the generator got wrong shows up as a difference, not as an agreement.
import { readdirSync } from 'node:fs';
import * as path from 'node:path';
import {
  intersect,
  isEmpty,
  readMessageSpec,
  type FieldSpec,
  type FieldType,
  type MessageSpec,
  type Versions,
} from '../message-spec';

/** A source of floats in [0, 1), such as a seeded generator's `next`. */
export type RandomFloat = () => number;

/** The package's committed schemas (libs/kafka-protocol/schemas), parsed. */
export function loadMessageSpecs(): MessageSpec[] {
  const schemas = path.join(__dirname, '..', '..', 'schemas');
  return readdirSync(schemas)
    .filter((name) => name.endsWith('.json'))
    .sort()
    .map((name) => readMessageSpec(path.join(schemas, name), name));
}

/** The versions of a message to test: all the schema ships (an open range ends at its lowest). */
export function versionsOf(message: MessageSpec): number[] {
  const { lowest, highest } = message.validVersions;
  if (isEmpty(message.validVersions)) return [];
  const last = highest === Infinity ? lowest : highest;
  return Array.from({ length: last - lowest + 1 }, (_, index) => lowest + index);
}

function contains(versions: Versions, version: number): boolean {
  return version >= versions.lowest && version <= versions.highest;
}

/** The struct definitions a message can refer to by name: nested ones and its commonStructs. */
function structFieldsOf(message: MessageSpec): Map<string, readonly FieldSpec[]> {
  const structs = new Map<string, readonly FieldSpec[]>();
  const visit = (fields: readonly FieldSpec[]): void => {
    for (const field of fields) {
      if (field.fields !== undefined) {
        structs.set(elementName(field.type), field.fields);
        visit(field.fields);
      }
    }
  };
  visit(message.fields);
  for (const common of message.commonStructs) {
    structs.set(common.name, common.fields);
    visit(common.fields);
  }
  return structs;
}

function elementName(type: FieldType): string {
  if (type.kind === 'array') return elementName(type.element);
  return type.name;
}

/** Whether a field is in the message at this version (tagged ones only in tagged versions). */
function isPresent(field: FieldSpec, message: MessageSpec, version: number): boolean {
  if (field.tag === undefined) return contains(field.versions, version);
  return (
    contains(intersect(field.versions, field.taggedVersions), version) &&
    contains(message.flexibleVersions, version)
  );
}

class MessageShapes {
  private readonly structs: Map<string, readonly FieldSpec[]>;

  constructor(private readonly message: MessageSpec) {
    this.structs = structFieldsOf(message);
  }

  fieldsOf(structName: string): readonly FieldSpec[] {
    const fields = this.structs.get(structName);
    if (fields === undefined) throw new Error(`${this.message.name}: no struct ${structName}`);
    return fields;
  }

  isPresent(field: FieldSpec, version: number): boolean {
    return isPresent(field, this.message, version);
  }

  defaultValue(field: FieldSpec): unknown {
    const text = field.defaultText;
    const nullDefault = text === 'null' && !isEmpty(field.nullableVersions);
    const type = field.type;
    if (type.kind === 'array') return nullDefault ? null : [];
    if (type.kind === 'struct') return nullDefault ? null : this.defaultStruct(type.name);
    switch (type.name) {
      case 'bool':
        return text === 'true';
      case 'int64':
        return text === undefined ? 0n : parseInteger(text);
      case 'float64':
        return text === undefined ? 0 : Number(text);
      case 'string':
        return nullDefault ? null : (text ?? '');
      case 'uuid':
        return Buffer.alloc(16);
      case 'bytes':
        return nullDefault ? null : Buffer.alloc(0);
      case 'records':
        return null;
      default:
        return text === undefined ? 0 : Number(parseInteger(text));
    }
  }

  defaultStruct(structName: string): Record<string, unknown> {
    const value: Record<string, unknown> = {};
    for (const field of this.fieldsOf(structName)) {
      value[propertyName(field.name)] = this.defaultValue(field);
    }
    return value;
  }
}

function propertyName(schemaName: string): string {
  return schemaName.charAt(0).toLowerCase() + schemaName.slice(1);
}

function parseInteger(text: string): bigint {
  const negative = text.startsWith('-');
  const magnitude = BigInt(negative ? text.slice(1) : text);
  return negative ? -magnitude : magnitude;
}

const codePoints = [0x61, 0x62, 0x7a, 0x30, 0x20, 0x2d, 0xe9, 0x20ac, 0x1d11e, 0x4e2d];

/**
 * A random message of the schema at `version`: every field present in the version holds a random
 * value (null now and then where the version allows it; tagged fields often their default), every
 * other field its default, as the generated interfaces shape them.
 */
export function randomMessage(
  message: MessageSpec,
  version: number,
  random: RandomFloat,
): Record<string, unknown> {
  const shapes = new MessageShapes(message);
  const integer = (min: number, max: number): number =>
    min + Math.floor(random() * (max - min + 1));

  const randomPrimitive = (name: string): unknown => {
    switch (name) {
      case 'bool':
        return random() < 0.5;
      case 'int8':
        return integer(-128, 127);
      case 'int16':
        return integer(-32768, 32767);
      case 'uint16':
        return integer(0, 65535);
      case 'int32':
        return random() < 0.3 ? integer(-1, 3) : integer(-(2 ** 31), 2 ** 31 - 1);
      case 'uint32':
        return integer(0, 2 ** 32 - 1);
      case 'int64': {
        if (random() < 0.3) return BigInt(integer(-1, 3));
        const high = BigInt(integer(0, 2 ** 32 - 1));
        const low = BigInt(integer(0, 2 ** 32 - 1));
        return BigInt.asIntN(64, (high << 32n) | low);
      }
      case 'float64':
        return [0, 1.5, -2.25, 1e300, 5e-324, random() * 1e6 - 5e5][integer(0, 5)];
      case 'string':
        return String.fromCodePoint(
          ...Array.from(
            { length: integer(0, 8) },
            () => codePoints[integer(0, codePoints.length - 1)]!,
          ),
        );
      case 'uuid':
        return randomBytes(16);
      default:
        return randomBytes(integer(0, name === 'records' ? 40 : 12));
    }
  };

  const randomBytes = (count: number): Buffer => {
    const bytes = Buffer.alloc(count);
    for (let index = 0; index < count; index++) bytes[index] = integer(0, 255);
    return bytes;
  };

  const randomValue = (type: FieldType, depth: number): unknown => {
    if (type.kind === 'primitive') return randomPrimitive(type.name);
    if (type.kind === 'struct') return randomStruct(type.name, depth + 1);
    const count = integer(0, depth > 2 ? 1 : 3);
    return Array.from({ length: count }, () => randomValue(type.element, depth + 1));
  };

  const randomStruct = (structName: string, depth: number): Record<string, unknown> =>
    randomFields(shapes.fieldsOf(structName), depth);

  const randomFields = (fields: readonly FieldSpec[], depth: number): Record<string, unknown> => {
    const value: Record<string, unknown> = {};
    for (const field of fields) {
      const property = propertyName(field.name);
      if (!shapes.isPresent(field, version) || (field.tag !== undefined && random() < 0.4)) {
        value[property] = shapes.defaultValue(field);
      } else if (contains(field.nullableVersions, version) && random() < 0.15) {
        value[property] = null;
      } else {
        value[property] = randomValue(field.type, depth);
      }
    }
    return value;
  };

  return randomFields(message.fields, 0);
}

/**
 * Kafka's JSON form of a message at `version`, as its generated JsonConverter reads it: only the
 * fields present in the version, int64 as JSON integers (not through Number), float64 always with
 * a fraction or exponent, bytes and records in base64, UUIDs in Kafka's URL-safe base64.
 */
export function kafkaJsonOf(
  message: MessageSpec,
  value: Record<string, unknown>,
  version: number,
): string {
  const shapes = new MessageShapes(message);
  const jsonOfValue = (type: FieldType, item: unknown): string => {
    if (item === null) return 'null';
    if (type.kind === 'array') {
      return `[${(item as unknown[]).map((element) => jsonOfValue(type.element, element)).join(',')}]`;
    }
    if (type.kind === 'struct') {
      return jsonOfFields(shapes.fieldsOf(type.name), item as Record<string, unknown>);
    }
    switch (type.name) {
      case 'int64':
        return (item as bigint).toString();
      case 'float64': {
        const text = String(item);
        return /[.eE]/.test(text) ? text : `${text}.0`;
      }
      case 'uuid':
        return JSON.stringify((item as Buffer).toString('base64url'));
      case 'bytes':
      case 'records':
        return JSON.stringify((item as Buffer).toString('base64'));
      default:
        return JSON.stringify(item);
    }
  };
  const jsonOfFields = (fields: readonly FieldSpec[], item: Record<string, unknown>): string => {
    const members = fields
      .filter((field) => shapes.isPresent(field, version))
      .map((field) => {
        const property = propertyName(field.name);
        return `${JSON.stringify(property)}:${jsonOfValue(field.type, item[property])}`;
      });
    return `{${members.join(',')}}`;
  };
  return jsonOfFields(message.fields, value);
}
