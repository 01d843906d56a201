import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { parse } from 'yaml';
import { z } from 'zod';

// The public repository's release workflow runs the release script the installed tests run (they
// release to a local registry and install from it), so what a tag publishes is what was tested.
const root = resolve(__dirname, '../..');
const WorkflowSchema = z.object({
  on: z.object({ push: z.object({ tags: z.array(z.string()) }) }),
  permissions: z.record(z.string(), z.string()),
  jobs: z.record(z.string(), z.object({ steps: z.array(z.object({ run: z.string().optional() })) })),
});

describe('the release workflow', () => {
  const workflow = WorkflowSchema.parse(parse(readFileSync(resolve(root, '.github/workflows/release.yaml'), 'utf8')));
  const runs = Object.values(workflow.jobs).flatMap((j) => j.steps.flatMap((s) => (s.run === undefined ? [] : [s.run])));

  it('runs on a version tag and calls npm run release, the script the installed tests release with', () => {
    expect(workflow.on.push.tags).toEqual(['v*.*.*']);
    expect(workflow.permissions).toMatchObject({ packages: 'write' });
    const release = runs.filter((r) => r.includes('npm run release --'));
    expect(release).toHaveLength(1);
    expect(release[0]).toMatch(/--registry "[^"]+" --version "\$\{GITHUB_REF_NAME#v\}"/);
    const scripts = (JSON.parse(readFileSync(resolve(root, 'package.json'), 'utf8')) as { scripts: Record<string, string> }).scripts;
    expect(scripts.release).toContain('e2e/src/release/release.ts');
    // the installed suites' setup releases through the same module
    expect(readFileSync(resolve(root, 'e2e/src/installed/installed-system.ts'), 'utf8')).toContain("from '../release/release'");
  });
});
