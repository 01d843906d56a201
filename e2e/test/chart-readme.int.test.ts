import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { CHART_DIR, CHART_README, renderChartReadme, undocumented, valueRows } from '../src/docs/chart-readme';
import { testBinDir } from '../src/index';

// The chart's README is helm-docs' rendering of values.yaml's comments: committed as rendered, and
// every value described (its own row, or under a described map whose default shows it).

describe("the chart's README", () => {
  const rendered = renderChartReadme(testBinDir());

  it('is what helm-docs renders from values.yaml now (npx nx run e2e:chart-readme writes it)', () => {
    expect(readFileSync(CHART_README, 'utf8')).toBe(rendered);
    expect(rendered).toContain('| inventoryPublisher.namespace | string | `""` |');
  });

  it('has no comment line that helm-docs would read as the start of a new description (a wrapped --flag)', () => {
    const values = readFileSync(join(CHART_DIR, 'values.yaml'), 'utf8').split('\n');
    expect(values.map((l, i) => `${i + 1}: ${l}`).filter((l) => /^\d+: \s*# --\S/.test(l))).toEqual([]);
  });

  it('describes every value, and would name one that lost its description or its row', () => {
    expect(undocumented(rendered)).toEqual([]);
    const rows = valueRows(rendered);
    expect(rows.length).toBeGreaterThan(100);
    const blanked = rendered.replace(/^(\| logLevel \| string \| `"info"` \| ).*\|$/m, '$1 |');
    expect(undocumented(blanked)).toEqual(['logLevel (no description)']);
    const dropped = rendered.replace(/^\| sandboxApiserver\.maxFileBytes \|.*\n/m, '');
    expect(undocumented(dropped)).toEqual(['sandboxApiserver.maxFileBytes (no row)']);
  });
});
