// Types for parse-prometheus-text-format (the package ships none): it turns the Prometheus text
// exposition format into metric families, as Prometheus's own parser groups them.
declare module 'parse-prometheus-text-format' {
  namespace parsePrometheusTextFormat {
    interface Sample {
      readonly value?: string;
      readonly labels?: Readonly<Record<string, string>>;
      readonly buckets?: Readonly<Record<string, string>>;
      readonly count?: string;
      readonly sum?: string;
    }
    interface MetricFamily {
      readonly name: string;
      readonly help: string;
      readonly type: 'COUNTER' | 'GAUGE' | 'HISTOGRAM' | 'SUMMARY' | 'UNTYPED';
      readonly metrics: readonly Sample[];
    }
  }
  function parsePrometheusTextFormat(text: string): parsePrometheusTextFormat.MetricFamily[];
  export = parsePrometheusTextFormat;
}
