// Renders charts/sandbox-scale/README.md with helm-docs from values.yaml's `# --` comments and
// README.md.gotmpl, so the values a platform team reads are the ones the chart takes, described
// where they are defined. `--check` compares instead of writing.
import { execFileSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse } from 'yaml';
import { toolPath, toolsDir } from '../control-plane/tools';
import { REPO_ROOT } from '../system/app-process';

export const CHART_DIR = join(REPO_ROOT, 'charts/sandbox-scale');
export const CHART_README = join(CHART_DIR, 'README.md');

/** The README helm-docs renders for the chart now (written nowhere). */
export function renderChartReadme(binDir: string = toolsDir()): string {
  return execFileSync(
    toolPath(binDir, 'helm-docs'),
    [
      '--chart-search-root',
      join(REPO_ROOT, 'charts'),
      '--chart-to-generate',
      CHART_DIR,
      '--dry-run',
      '--sort-values-order',
      'file',
      '--skip-version-footer',
      '--log-level',
      'error',
    ],
    { encoding: 'utf8' },
  );
}

/** The value rows of a rendered README: key and description. */
export function valueRows(readme: string): { key: string; description: string }[] {
  return readme
    .split('\n')
    .filter((l) => l.startsWith('| ') && !l.startsWith('| Key '))
    .map((l) => {
      const cells = l.split(' | ');
      return { key: (cells[0] ?? '').slice(2).trim(), description: (cells[3] ?? '').replace(/ \|$/, '').trim() };
    });
}

/** Every leaf of values.yaml (an empty map or list counts as one), by its dotted key. */
export function valueLeaves(values: unknown, prefix = ''): string[] {
  if (values !== null && typeof values === 'object' && !Array.isArray(values) && Object.keys(values).length > 0)
    return Object.entries(values).flatMap(([k, v]) => valueLeaves(v, prefix === '' ? k : `${prefix}.${k}`));
  return [prefix];
}

/**
 * What the README leaves undescribed: rows without a description, and leaves of values.yaml
 * neither in a row of their own nor under a described map's row (whose default shows them).
 */
export function undocumented(readme: string): string[] {
  const rows = valueRows(readme);
  const keys = rows.map((r) => r.key);
  const leaves = valueLeaves(parse(readFileSync(join(CHART_DIR, 'values.yaml'), 'utf8')));
  const uncovered = leaves.filter((l) => !keys.some((k) => l === k || l.startsWith(`${k}.`) || l.startsWith(`${k}[`)));
  return [...rows.filter((r) => r.description === '').map((r) => `${r.key} (no description)`), ...uncovered.map((l) => `${l} (no row)`)];
}

if (require.main === module) {
  const out = renderChartReadme();
  const missing = undocumented(out);
  if (missing.length > 0) {
    process.stderr.write(`values.yaml leaves these undescribed (add a "# --" comment):\n  ${missing.join('\n  ')}\n`);
    process.exit(1);
  }
  if (process.argv.includes('--check')) {
    if (readFileSync(CHART_README, 'utf8') !== out) {
      process.stderr.write(`${CHART_README} is out of date: run npx nx run e2e:chart-readme\n`);
      process.exit(1);
    }
  } else {
    writeFileSync(CHART_README, out);
    process.stdout.write(`wrote ${CHART_README}\n`);
  }
}
