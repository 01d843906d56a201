import { exposedNames, promqlMetricNames, samples } from './metric-names';

describe('promqlMetricNames', () => {
  it('finds the metrics an expression selects, not functions, labels, durations or keywords', () => {
    expect(promqlMetricNames('histogram_quantile(0.99, sum by (le, verb) (rate(a_seconds_bucket{verb!="watch", x=~"y.*"}[5m])))')).toEqual([
      'a_seconds_bucket',
    ]);
    expect(promqlMetricNames('time() - max by (pod) (b_ts) > 300 and max without (node) (c) > 0')).toEqual(['b_ts', 'c']);
    expect(
      promqlMetricNames('sum(rate(x_total{code=~"5.."}[5m])) / ignoring (code) group_left sum(rate(y_total[5m] offset 1h)) > bool 0.05'),
    ).toEqual(['x_total', 'y_total']);
  });
});

describe('exposedNames and samples', () => {
  const page = [
    '# HELP h A histogram.',
    '# TYPE h histogram',
    'h_bucket{le="1",verb="get"} 2',
    'h_sum{verb="get"} 0.5',
    'h_count{verb="get"} 2',
    '# TYPE g gauge',
    'g{node="n-1"} 1',
    'g{node="n-2"} 0',
    '# TYPE c_total counter',
  ].join('\n');

  it('lists each family, histograms with their series, families without samples too', () => {
    expect([...exposedNames(page)].sort()).toEqual(['c_total', 'g', 'h', 'h_bucket', 'h_count', 'h_sum']);
  });

  it('reads the samples of one family with their labels', () => {
    expect(samples(page, 'g')).toEqual([
      { labels: { node: 'n-1' }, value: 1 },
      { labels: { node: 'n-2' }, value: 0 },
    ]);
    expect(samples(page, 'c_total')).toEqual([]);
  });
});
