import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseAllDocuments, parse, stringify } from 'yaml';
import { z } from 'zod';
import { REPO_ROOT, runTool } from '../src/index';
import { monitoringToolsDir, toolPath } from '../src/control-plane/tools';
import { runProcess } from '../src/system/run-command';

// The chart's alert rules checked and unit-tested by Prometheus' own promtool: `check rules` on the
// groups of the rendered PrometheusRule, `test rules` on charts/sandbox-scale/tests, whose cases
// fire every alert once its `for:` has passed and not before.

const chartDir = join(REPO_ROOT, 'charts', 'sandbox-scale');
const rulesFile = join(chartDir, 'files', 'prometheus-rules.yaml');
const testsFile = join(chartDir, 'tests', 'prometheus-rules.test.yaml');

const RulesSchema = z.object({ groups: z.array(z.object({ name: z.string(), rules: z.array(z.object({ alert: z.string() })) })) });
const RenderedSchema = z.object({ kind: z.string(), spec: z.unknown().optional() });
const TestsSchema = z.object({
  tests: z.array(z.object({ alert_rule_test: z.array(z.object({ alertname: z.string(), exp_alerts: z.array(z.unknown()) })) })),
});

let promtool: string;
let work: string;

beforeAll(() => {
  promtool = toolPath(monitoringToolsDir(), 'promtool');
  work = mkdtempSync(join(tmpdir(), 'promtool-'));
});

afterAll(() => rmSync(work, { recursive: true, force: true }));

describe('the chart alert rules under promtool', () => {
  const alerts = RulesSchema.parse(parse(readFileSync(rulesFile, 'utf8'))).groups.flatMap((g) => g.rules.map((r) => r.alert));

  it('checks the rendered PrometheusRule groups', async () => {
    const rendered = await runTool('helm', ['template', 'mon', chartDir, '--set', 'metrics.prometheusRule.enabled=true']);
    expect(rendered.stderr).toBe('');
    const rule = parseAllDocuments(rendered.stdout)
      .map((d) => RenderedSchema.safeParse(d.toJS()))
      .flatMap((r) => (r.success && r.data.kind === 'PrometheusRule' ? [r.data] : []));
    expect(rule).toHaveLength(1);
    const file = join(work, 'rendered-rules.yaml');
    writeFileSync(file, stringify(rule[0]?.spec));
    const res = await runProcess(promtool, ['check', 'rules', file]);
    expect({ code: res.code, stderr: res.stderr }).toEqual({ code: 0, stderr: '' });
    expect(res.stdout).toContain(`SUCCESS: ${alerts.length} rules found`);
  });

  it('has a case that fires and one that does not for every alert, and they pass', async () => {
    const cases = TestsSchema.parse(parse(readFileSync(testsFile, 'utf8'))).tests.flatMap((t) => t.alert_rule_test);
    for (const alert of alerts) {
      const mine = cases.filter((c) => c.alertname === alert);
      expect({ alert, fires: mine.some((c) => c.exp_alerts.length > 0), quiet: mine.some((c) => c.exp_alerts.length === 0) }).toEqual({
        alert,
        fires: true,
        quiet: true,
      });
    }
    const res = await runProcess(promtool, ['test', 'rules', testsFile]);
    expect({ code: res.code, out: res.stdout + res.stderr }).toEqual({ code: 0, out: expect.stringContaining('SUCCESS') as unknown });
  });

  it('fails a rule file whose alert fires before its for: has passed', async () => {
    // the same cases against a copy whose first alert waits 1m instead of its shipped duration
    const dir = mkdtempSync(join(work, 'shorter-'));
    const first = parse(readFileSync(rulesFile, 'utf8')) as { groups: { rules: { for: string }[] }[] };
    const target = first.groups[0]?.rules[0];
    if (!target) throw new Error(`no rule in ${rulesFile}`);
    expect(target.for).not.toBe('1m');
    target.for = '1m';
    writeFileSync(join(dir, 'rules.yaml'), stringify(first));
    const tests = parse(readFileSync(testsFile, 'utf8')) as { rule_files: string[] };
    tests.rule_files = ['rules.yaml'];
    writeFileSync(join(dir, 'tests.yaml'), stringify(tests));
    const res = await runProcess(promtool, ['test', 'rules', join(dir, 'tests.yaml')]);
    expect(res.code).toBe(1);
    expect(res.stdout + res.stderr).toContain(`alertname: ${alerts[0] ?? ''}, time: 4m`);
  });
});
