/**
 * Metric names on both sides of a scrape: the families a /metrics page (Prometheus text format)
 * declares, and the metric names a PromQL expression reads. Used to check that the chart's
 * alerts and dashboard only name metrics the apps export.
 */

/** Series names a page can hold: each `# TYPE` family, with _bucket/_sum/_count for histograms and summaries. */
export function exposedNames(page: string): Set<string> {
  const names = new Set<string>();
  for (const m of page.matchAll(/^# TYPE ([a-zA-Z_:][a-zA-Z0-9_:]*) (\w+)$/gm)) {
    const [, name = '', type] = m;
    names.add(name);
    if (type === 'histogram') for (const s of ['_bucket', '_sum', '_count']) names.add(name + s);
    if (type === 'summary') for (const s of ['_sum', '_count']) names.add(name + s);
  }
  return names;
}

/** Samples of one series family: label sets and values. */
export function samples(page: string, name: string): { labels: Record<string, string>; value: number }[] {
  const out: { labels: Record<string, string>; value: number }[] = [];
  for (const line of page.split('\n')) {
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (!m || m[1] !== name) continue;
    const labels: Record<string, string> = {};
    for (const l of (m[2] ?? '').matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g)) labels[l[1] ?? ''] = l[2] ?? '';
    out.push({ labels, value: Number(m[3]) });
  }
  return out;
}

const PROMQL_KEYWORDS = new Set([
  'by',
  'without',
  'on',
  'ignoring',
  'group_left',
  'group_right',
  'bool',
  'and',
  'or',
  'unless',
  'offset',
  'inf',
  'nan',
]);

/**
 * The metric names a PromQL expression selects. Strings, label matchers `{…}`, range and
 * subquery brackets `[…]` and grouping clauses `by (…)` are removed first; what is left are
 * function names (followed by `(`), keywords, numbers and metric names.
 */
export function promqlMetricNames(expr: string): string[] {
  const stripped = expr
    .replace(/"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'/g, '""')
    .replace(/\{[^}]*\}/g, ' ')
    .replace(/\[[^\]]*\]/g, ' ')
    .replace(/\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)/g, ' ');
  const names = new Set<string>();
  // numbers and durations (0.99, 1e3, 1h) are read as whole tokens, then skipped
  for (const m of stripped.matchAll(/([a-zA-Z0-9_:.]+)(\s*\()?/g)) {
    const [, id = '', call] = m;
    if (call !== undefined || PROMQL_KEYWORDS.has(id.toLowerCase()) || /^[\d.]/.test(id)) continue;
    names.add(id);
  }
  return [...names];
}
