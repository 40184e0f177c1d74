/**
 * What commands print: aligned tables for people, JSON for scripts (--json). JSON keeps Kafka's
 * int64 numbers (offsets) exact by writing bigints as decimal strings.
 */

/** Columns padded to their widest cell, separated by two spaces, with a header row. */
export function formatTable(
  headers: readonly string[],
  rows: readonly (readonly (string | number)[])[],
): string {
  const cells = [headers, ...rows.map((row) => row.map(String))];
  const widths = headers.map((_, column) =>
    Math.max(...cells.map((row) => (row[column] ?? '').length)),
  );
  return cells
    .map((row) =>
      row
        .map((cell, column) => (column === row.length - 1 ? cell : cell.padEnd(widths[column]!)))
        .join('  ')
        .trimEnd(),
    )
    .map((line) => `${line}\n`)
    .join('');
}

/** JSON on one line; bigints as decimal strings so no offset loses precision. */
export function toJsonLine(value: unknown): string {
  return JSON.stringify(value, (_key, item: unknown) =>
    typeof item === 'bigint' ? item.toString() : item,
  );
}

/** JSON indented for --json output of the admin commands. */
export function toJsonDocument(value: unknown): string {
  return `${JSON.stringify(value, (_key, item: unknown) => (typeof item === 'bigint' ? item.toString() : item), 2)}\n`;
}

/** A list of broker ids as `1,2,3`, the way Kafka's tools print replicas and ISR. */
export function formatIds(ids: readonly number[]): string {
  return ids.join(',');
}

/** Writes and waits for the stream to drain when its buffer is full (bounded memory). */
export async function writeWithBackpressure(
  stream: NodeJS.WritableStream,
  text: string,
): Promise<void> {
  if (stream.write(text)) return;
  await new Promise<void>((resolve) => stream.once('drain', resolve));
}

export function isTerminal(stream: NodeJS.WritableStream): boolean {
  return (stream as { isTTY?: boolean }).isTTY === true;
}
