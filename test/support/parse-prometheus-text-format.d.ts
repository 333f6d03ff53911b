// The types of parse-prometheus-text-format (it ships none): what its README says it returns.
declare module 'parse-prometheus-text-format' {
  interface Sample {
    value?: string;
    labels?: Record<string, string>;
    buckets?: Record<string, string>;
    quantiles?: Record<string, string>;
    count?: string;
    sum?: string;
  }
  interface MetricFamily {
    name: string;
    help: string;
    type: 'COUNTER' | 'GAUGE' | 'SUMMARY' | 'HISTOGRAM' | 'UNTYPED';
    metrics: Sample[];
  }
  /** Parses Prometheus text exposition; throws on text it cannot read. */
  export default function parsePrometheusTextFormat(text: string): MetricFamily[];
}
