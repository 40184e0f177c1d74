import parsePrometheusTextFormat, { type MetricFamily } from 'parse-prometheus-text-format';

/**
 * Scrapes Spool processes' `/metrics` and reads them with a real Prometheus text-format parser,
 * so a test sees what Prometheus would: families with their type and help, samples with labels.
 */
export type Scrape = readonly MetricFamily[];

export async function scrape(metricsPort: number): Promise<Scrape> {
  const response = await fetch(`http://127.0.0.1:${metricsPort}/metrics`, {
    signal: AbortSignal.timeout(5_000),
  });
  if (response.status !== 200) throw new Error(`/metrics on ${metricsPort}: ${response.status}`);
  return parsePrometheusTextFormat(await response.text());
}

export function family(scraped: Scrape, name: string): MetricFamily | undefined {
  return scraped.find((candidate) => candidate.name === name);
}

/**
 * The sum of a counter's or gauge's samples whose labels include `labels`, over every scrape;
 * undefined when no scrape has the family at all.
 */
export function sumOf(
  scrapes: readonly Scrape[],
  name: string,
  labels: Readonly<Record<string, string>> = {},
): number | undefined {
  let found = false;
  let total = 0;
  for (const scraped of scrapes) {
    const metric = family(scraped, name);
    if (metric === undefined) continue;
    found = true;
    for (const sample of metric.metrics) {
      const matches = Object.entries(labels).every(
        ([key, value]) => sample.labels?.[key] === value,
      );
      if (matches) total += Number(sample.value);
    }
  }
  return found ? total : undefined;
}

/**
 * The series names a PromQL expression selects: what is left once strings, label matchers,
 * ranges, grouping clauses, numbers, function calls and keywords are taken out.
 */
export function metricNamesIn(expression: string): string[] {
  const stripped = expression
    .replace(/"[^"]*"/g, ' ')
    .replace(/\{[^}]*\}/g, ' ')
    .replace(/\[[^\]]*\]/g, ' ')
    .replace(/\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)/g, ' ')
    .replace(/(^|[^a-zA-Z0-9_:])[0-9][0-9.eE+]*[smhdwy]?/g, '$1 ');
  const names = new Set<string>();
  for (const match of stripped.matchAll(/[a-zA-Z_:][a-zA-Z0-9_:]*/g)) {
    const after = stripped.slice(match.index + match[0].length).trimStart();
    if (after.startsWith('(') || promqlKeywords.has(match[0])) continue;
    names.add(match[0]);
  }
  return [...names];
}

const promqlKeywords = new Set(['and', 'or', 'unless', 'bool', 'offset', 'inf', 'nan']);

/** Whether a series name is exported in the scrapes (directly or as a histogram's series). */
export function isExported(scrapes: readonly Scrape[], name: string): boolean {
  if (scrapes.some((scraped) => family(scraped, name) !== undefined)) return true;
  const histogramSeries = /^(.*)_(bucket|sum|count)$/.exec(name);
  if (histogramSeries === null) return false;
  return scrapes.some((scraped) => {
    const base = family(scraped, histogramSeries[1]!);
    return base !== undefined && (base.type === 'HISTOGRAM' || base.type === 'SUMMARY');
  });
}
