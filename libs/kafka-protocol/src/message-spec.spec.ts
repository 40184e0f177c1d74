// Proves the parser of Kafka's message definitions that the generator and the testing entry share:
// comments stripped as Jackson's ALLOW_COMMENTS does (never inside strings), Kafka's version
// ranges, and schemas that break the format's rules refused with an error naming the message,
// the field and what is wrong; and that the committed schemas parse into every kind of message.
import { describe, expect, it } from 'vitest';
import {
  covers,
  intersect,
  isEmpty,
  parseMessageSpec,
  parseVersions,
  stripJsonComments,
} from './message-spec';
import { loadMessageSpecs } from './testing/index';

function schema(fields: unknown[], extra: Record<string, unknown> = {}): string {
  return JSON.stringify({
    apiKey: 99,
    type: 'request',
    name: 'TestRequest',
    validVersions: '0-3',
    flexibleVersions: '2+',
    fields,
    ...extra,
  });
}

describe('stripJsonComments', () => {
  it('removes line and block comments but not // or /* inside strings', () => {
    const text = '// header\n{ "a": "http://x/*y*/", /* note */ "b": 1 // trailing\n}';
    expect(JSON.parse(stripJsonComments(text))).toEqual({ a: 'http://x/*y*/', b: 1 });
  });

  it('keeps escaped quotes inside strings', () => {
    expect(JSON.parse(stripJsonComments('{ "a": "say \\"//hi\\"" }'))).toEqual({ a: 'say "//hi"' });
  });
});

describe('version ranges', () => {
  it('reads N, N+, N-M and none', () => {
    expect(parseVersions('3', 'x')).toEqual({ lowest: 3, highest: 3 });
    expect(parseVersions('3+', 'x')).toEqual({ lowest: 3, highest: Infinity });
    expect(parseVersions('1-4', 'x')).toEqual({ lowest: 1, highest: 4 });
    expect(isEmpty(parseVersions('none', 'x'))).toBe(true);
    expect(intersect(parseVersions('1-4', 'x'), parseVersions('3+', 'x'))).toEqual({
      lowest: 3,
      highest: 4,
    });
    expect(isEmpty(intersect(parseVersions('0-1', 'x'), parseVersions('3+', 'x')))).toBe(true);
    expect(covers(parseVersions('0+', 'x'), parseVersions('3-5', 'x'))).toBe(true);
  });

  it('refuses anything else, naming where it was', () => {
    expect(() => parseVersions('3-', 'TestRequest.Foo')).toThrow(
      "TestRequest.Foo: version range '3-' is not N, N+, N-M or none",
    );
  });
});

describe('parseMessageSpec', () => {
  it('reads fields, nested structs, tags and defaults', () => {
    const spec = parseMessageSpec(
      schema([
        { name: 'TimeoutMs', type: 'int32', versions: '0+', default: '-1' },
        {
          name: 'Topics',
          type: '[]Topic',
          versions: '1+',
          nullableVersions: '2+',
          fields: [{ name: 'Name', type: 'string', versions: '1+' }],
        },
        { name: 'Hint', type: 'string', versions: '2+', taggedVersions: '2+', tag: 0 },
      ]),
      'TestRequest.json',
    );
    expect(spec.fields.map((field) => field.name)).toEqual(['TimeoutMs', 'Topics', 'Hint']);
    expect(spec.fields[1]!.type).toEqual({
      kind: 'array',
      element: { kind: 'struct', name: 'Topic' },
    });
    expect(spec.fields[2]!.tag).toBe(0);
    expect(spec.fields[0]!.defaultText).toBe('-1');
  });

  it('refuses an unknown type, a tag without tagged versions, and an unknown message type', () => {
    expect(() =>
      parseMessageSpec(schema([{ name: 'X', type: 'int128', versions: '0+' }]), 'T.json'),
    ).toThrow("TestRequest.X: unknown type 'int128'");
    expect(() =>
      parseMessageSpec(schema([{ name: 'X', type: 'int32', versions: '0+', tag: 1 }]), 'T.json'),
    ).toThrow('TestRequest.X: a tagged field needs both tag and taggedVersions');
    expect(() => parseMessageSpec(schema([], { type: 'event' }), 'T.json')).toThrow(
      "T.json: unknown message type 'event'",
    );
  });

  it('parses every committed schema, of every kind', () => {
    const specs = loadMessageSpecs();
    expect(specs.length).toBe(203);
    expect(new Set(specs.map((spec) => spec.type))).toEqual(
      new Set(['request', 'response', 'header', 'data']),
    );
  });
});
