// The model of Kafka's message definitions (clients/src/main/resources/common/message/*.json, as
// shipped in the kafka-clients jar), parsed and checked: version ranges, field types, defaults.
// The rules follow the README.md that ships beside the schemas.
import { readFileSync } from 'node:fs';

/** An inclusive version range; `highest` is Infinity for an open range ("3+"). Empty if none. */
export interface Versions {
  readonly lowest: number;
  readonly highest: number;
}

export const noVersions: Versions = { lowest: 1, highest: 0 };

export function parseVersions(text: string | undefined, context: string): Versions {
  if (text === undefined || text === 'none') return noVersions;
  const open = /^(\d+)\+$/.exec(text);
  if (open) return { lowest: Number(open[1]), highest: Infinity };
  const range = /^(\d+)-(\d+)$/.exec(text);
  if (range) return { lowest: Number(range[1]), highest: Number(range[2]) };
  const single = /^(\d+)$/.exec(text);
  if (single) return { lowest: Number(single[1]), highest: Number(single[1]) };
  throw new Error(`${context}: version range '${text}' is not N, N+, N-M or none`);
}

export function isEmpty(versions: Versions): boolean {
  return versions.lowest > versions.highest;
}

export function intersect(left: Versions, right: Versions): Versions {
  const result = {
    lowest: Math.max(left.lowest, right.lowest),
    highest: Math.min(left.highest, right.highest),
  };
  return isEmpty(result) ? noVersions : result;
}

/** Whether `inner` covers all of `outer`. */
export function covers(inner: Versions, outer: Versions): boolean {
  return isEmpty(outer) || (inner.lowest <= outer.lowest && inner.highest >= outer.highest);
}

export const primitiveTypes = [
  'bool',
  'int8',
  'int16',
  'uint16',
  'int32',
  'uint32',
  'int64',
  'float64',
  'string',
  'uuid',
  'bytes',
  'records',
] as const;
export type PrimitiveType = (typeof primitiveTypes)[number];

export type FieldType =
  | { readonly kind: 'primitive'; readonly name: PrimitiveType }
  | { readonly kind: 'struct'; readonly name: string }
  | { readonly kind: 'array'; readonly element: FieldType };

export interface FieldSpec {
  readonly name: string;
  readonly type: FieldType;
  readonly versions: Versions;
  readonly nullableVersions: Versions;
  readonly taggedVersions: Versions;
  readonly tag: number | undefined;
  /** The field's own flexibleVersions, which overrides the message's (RequestHeader.ClientId). */
  readonly flexibleVersions: Versions | undefined;
  readonly ignorable: boolean;
  readonly defaultText: string | undefined;
  readonly about: string;
  /** The fields of a struct or array-of-struct type defined here. */
  readonly fields: readonly FieldSpec[] | undefined;
}

export interface StructSpec {
  readonly name: string;
  readonly versions: Versions;
  readonly fields: readonly FieldSpec[];
}

export interface MessageSpec {
  readonly name: string;
  readonly type: 'request' | 'response' | 'header' | 'data';
  readonly apiKey: number | undefined;
  readonly validVersions: Versions;
  readonly flexibleVersions: Versions;
  readonly latestVersionUnstable: boolean;
  /** Which of Kafka's listeners serve the API (broker, controller), for requests. */
  readonly listeners: readonly string[];
  readonly fields: readonly FieldSpec[];
  readonly commonStructs: readonly StructSpec[];
  /** The file the spec was read from, for messages. */
  readonly fileName: string;
}

/** Removes `//` and `/* *\/` comments outside strings (Jackson's ALLOW_COMMENTS, as Kafka does). */
export function stripJsonComments(text: string): string {
  let result = '';
  let index = 0;
  while (index < text.length) {
    const character = text[index]!;
    if (character === '"') {
      let end = index + 1;
      while (end < text.length && text[end] !== '"') end += text[end] === '\\' ? 2 : 1;
      result += text.slice(index, end + 1);
      index = end + 1;
    } else if (character === '/' && text[index + 1] === '/') {
      while (index < text.length && text[index] !== '\n') index++;
    } else if (character === '/' && text[index + 1] === '*') {
      const end = text.indexOf('*/', index + 2);
      if (end < 0) throw new Error('unterminated /* comment');
      index = end + 2;
    } else {
      result += character;
      index++;
    }
  }
  return result;
}

function parseType(text: string, context: string): FieldType {
  if (text.startsWith('[]')) return { kind: 'array', element: parseType(text.slice(2), context) };
  if ((primitiveTypes as readonly string[]).includes(text)) {
    return { kind: 'primitive', name: text as PrimitiveType };
  }
  if (/^[A-Z][A-Za-z0-9]*$/.test(text)) return { kind: 'struct', name: text };
  throw new Error(`${context}: unknown type '${text}'`);
}

interface RawField {
  name?: unknown;
  type?: unknown;
  versions?: unknown;
  nullableVersions?: unknown;
  taggedVersions?: unknown;
  tag?: unknown;
  flexibleVersions?: unknown;
  ignorable?: unknown;
  default?: unknown;
  about?: unknown;
  fields?: unknown;
}

function parseField(raw: RawField, context: string): FieldSpec {
  if (typeof raw.name !== 'string' || typeof raw.type !== 'string') {
    throw new Error(`${context}: a field needs a string name and type`);
  }
  const where = `${context}.${raw.name}`;
  const versions = parseVersions(optionalString(raw.versions, where), where);
  const taggedVersions = parseVersions(optionalString(raw.taggedVersions, where), where);
  if ((raw.tag === undefined) !== isEmpty(taggedVersions)) {
    throw new Error(`${where}: a tagged field needs both tag and taggedVersions`);
  }
  if (raw.tag !== undefined && typeof raw.tag !== 'number') {
    throw new Error(`${where}: tag must be a number`);
  }
  const flexibleText = optionalString(raw.flexibleVersions, where);
  return {
    name: raw.name,
    type: parseType(raw.type, where),
    versions,
    nullableVersions: parseVersions(optionalString(raw.nullableVersions, where), where),
    taggedVersions,
    tag: raw.tag,
    flexibleVersions: flexibleText === undefined ? undefined : parseVersions(flexibleText, where),
    ignorable: raw.ignorable === true,
    defaultText: raw.default === undefined ? undefined : String(raw.default),
    about: typeof raw.about === 'string' ? raw.about : '',
    fields: Array.isArray(raw.fields)
      ? raw.fields.map((field: RawField) => parseField(field, where))
      : undefined,
  };
}

function optionalString(value: unknown, context: string): string | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== 'string') throw new Error(`${context}: expected a string, got ${value}`);
  return value;
}

export function parseMessageSpec(text: string, fileName: string): MessageSpec {
  const raw = JSON.parse(stripJsonComments(text)) as Record<string, unknown>;
  const name = raw['name'];
  const type = raw['type'];
  if (typeof name !== 'string') throw new Error(`${fileName}: no message name`);
  if (type !== 'request' && type !== 'response' && type !== 'header' && type !== 'data') {
    throw new Error(`${fileName}: unknown message type '${String(type)}'`);
  }
  const apiKey = raw['apiKey'];
  if (apiKey !== undefined && typeof apiKey !== 'number') {
    throw new Error(`${fileName}: apiKey must be a number`);
  }
  const validVersions = parseVersions(optionalString(raw['validVersions'], name), name);
  return {
    name,
    type,
    apiKey,
    validVersions,
    flexibleVersions: parseVersions(optionalString(raw['flexibleVersions'], name), name),
    latestVersionUnstable: raw['latestVersionUnstable'] === true,
    listeners: Array.isArray(raw['listeners']) ? raw['listeners'].map(String) : [],
    fields: ((raw['fields'] ?? []) as RawField[]).map((field) => parseField(field, name)),
    commonStructs: ((raw['commonStructs'] ?? []) as Record<string, unknown>[]).map((struct) => {
      const structName = String(struct['name']);
      return {
        name: structName,
        versions: parseVersions(optionalString(struct['versions'], structName), structName),
        fields: (struct['fields'] as RawField[]).map((field) =>
          parseField(field, `${name}.${structName}`),
        ),
      };
    }),
    fileName,
  };
}

export function readMessageSpec(path: string, fileName: string): MessageSpec {
  return parseMessageSpec(readFileSync(path, 'utf8'), fileName);
}
