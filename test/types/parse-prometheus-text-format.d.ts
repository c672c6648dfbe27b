// The package ships no types: what the tests use of it.
declare module 'parse-prometheus-text-format' {
  interface Sample { value: string; labels?: Record<string, string> }
  interface Family { name: string; help: string; type: string; metrics: Sample[] }
  export default function parsePrometheusTextFormat(text: string): Family[];
}
