// Builds the published @sandbox-scale/sdk: `tsx libs/sandbox-sdk/scripts/build-package.ts [OUT]`
// (default dist/sandbox-sdk). What it takes from the workspace's own libraries (scale-core,
// kube-runtime) is bundled in, so the package needs only what npm serves; what it takes from
// npm stays a dependency at the version the workspace pins. The version is the chart's appVersion:
// one version for the whole release. `npm pack` in OUT makes the tarball.
import { chmodSync, copyFileSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { builtinModules } from 'node:module';
import { dirname, join, resolve } from 'node:path';
import { generateDtsBundle } from 'dts-bundle-generator';
import { build, type Metafile } from 'esbuild';
import { parse as parseYaml } from 'yaml';
import { z } from 'zod';

const LIB = resolve(__dirname, '..');
const ROOT = resolve(LIB, '../..');

/** The executables: the plugin, and what kubectl runs to complete its arguments. */
const BINS = ['kubectl-sandbox', 'kubectl_complete-sandbox'] as const;

const SourcePackage = z.object({ description: z.string(), dependencies: z.record(z.string(), z.string()) });
const Chart = z.object({ appVersion: z.string().min(1), home: z.string().url() });

/** The packages a bundle may leave as imports: node's own, and the package's dependencies. */
function allowed(deps: readonly string[]): (specifier: string) => boolean {
  const builtins = new Set(builtinModules);
  return (s) => s.startsWith('node:') || builtins.has(s) || deps.some((d) => s === d || s.startsWith(`${d}/`));
}

/** Every bare import a bundle kept, so a workspace package that slipped through fails the build. */
function importsLeft(meta: Metafile | undefined): string[] {
  if (meta === undefined) throw new Error('esbuild wrote no metafile');
  return [...new Set(Object.values(meta.outputs).flatMap((o) => o.imports.filter((i) => i.external).map((i) => i.path)))].sort();
}

export async function buildSdkPackage(out = join(ROOT, 'dist/sandbox-sdk')): Promise<{ dir: string; version: string }> {
  const source = SourcePackage.parse(JSON.parse(readFileSync(join(LIB, 'package.json'), 'utf8')));
  const chart = Chart.parse(parseYaml(readFileSync(join(ROOT, 'charts/sandbox-scale/Chart.yaml'), 'utf8')));
  // the workspace's own libraries are bundled; tsx ran the sources in the repository and is not
  // needed. @types/ws stays: the declarations name KubeConfig, whose types import ws's, so a
  // caller's tsc needs them (they are a dependency, not a dev one, for that reason).
  const dependencies = Object.fromEntries(
    Object.entries(source.dependencies).filter(([name]) => !name.startsWith('@sandbox-scale/') && name !== 'tsx'),
  );
  const external = Object.keys(dependencies).flatMap((d) => [d, `${d}/*`]);
  rmSync(out, { recursive: true, force: true });
  mkdirSync(join(out, 'lib'), { recursive: true });
  mkdirSync(join(out, 'bin'), { recursive: true });

  const common = {
    bundle: true,
    platform: 'node' as const,
    target: 'node20',
    external,
    metafile: true,
    // the is… predicates compare class names, which renaming a colliding class would change
    keepNames: true,
    legalComments: 'none' as const,
    logLevel: 'warning' as const,
    define: { SANDBOX_SCALE_SDK_VERSION: JSON.stringify(chart.appVersion) },
  };
  const results = await Promise.all([
    build({ ...common, entryPoints: [join(LIB, 'src/index.ts')], format: 'esm', outfile: join(out, 'lib/index.mjs') }),
    build({ ...common, entryPoints: [join(LIB, 'src/index.ts')], format: 'cjs', outfile: join(out, 'lib/index.cjs') }),
    build({ ...common, entryPoints: [join(LIB, 'src/cli/run-main.ts')], format: 'esm', outfile: join(out, 'lib/cli.mjs') }),
  ]);
  const ok = allowed(Object.keys(dependencies));
  const stray = results.flatMap((r) => importsLeft(r.metafile)).filter((i) => !ok(i));
  if (stray.length > 0) throw new Error(`the bundles import packages the package does not depend on: ${[...new Set(stray)].join(', ')}`);

  // one declaration file: the workspace libraries' types inlined (tsconfig.package.json maps them
  // to their sources, so they are part of the program, not libraries), the dependencies' imported
  const [dts] = generateDtsBundle([{ filePath: join(LIB, 'src/index.ts'), output: { noBanner: true } }], {
    preferredConfigPath: join(LIB, 'tsconfig.package.json'),
  });
  if (dts === undefined || /@sandbox-scale\//.test(dts.replace(/^\s*\/\/.*$/gm, '')))
    throw new Error('the declarations still import a workspace library');
  for (const f of ['index.d.mts', 'index.d.cts']) writeFileSync(join(out, 'lib', f), dts);

  // the plugin is this one process: kubectl runs the file, which runs the bundle; kubectl runs
  // kubectl_complete-sandbox for `kubectl sandbox <TAB>`, the same bundle answering completions
  for (const name of BINS) {
    const bin = join(out, 'bin', name);
    writeFileSync(
      bin,
      [
        '#!/usr/bin/env node',
        `// kubectl runs ${name} from PATH: the plugin, in this process`,
        "import('../lib/cli.mjs').catch((err) => {",
        `  process.stderr.write(\`error: cannot start ${name}: \${err instanceof Error ? err.message : String(err)}\\n\`);`,
        '  process.exitCode = 1;',
        '});',
        '',
      ].join('\n'),
    );
    chmodSync(bin, 0o755);
  }

  const repository = chart.home;
  const pkg = {
    name: '@sandbox-scale/sdk',
    version: chart.appVersion,
    description: source.description,
    license: 'Apache-2.0',
    repository: { type: 'git', url: `git+${repository}.git`, directory: 'libs/sandbox-sdk' },
    homepage: `${repository}/blob/main/docs/using-sandboxes.md`,
    engines: { node: '>=20' },
    exports: {
      '.': {
        import: { types: './lib/index.d.mts', default: './lib/index.mjs' },
        require: { types: './lib/index.d.cts', default: './lib/index.cjs' },
      },
      './package.json': './package.json',
    },
    main: './lib/index.cjs',
    module: './lib/index.mjs',
    types: './lib/index.d.cts',
    bin: Object.fromEntries(BINS.map((b) => [b, `bin/${b}`])),
    files: ['lib', 'bin', 'README.md', 'CHANGELOG.md'],
    // the plugin runs for its effects; the library is free of them, so bundlers may drop what is unused
    sideEffects: ['./lib/cli.mjs', ...BINS.map((b) => `./bin/${b}`)],
    dependencies,
  };
  writeFileSync(join(out, 'package.json'), `${JSON.stringify(pkg, null, 2)}\n`);
  copyFileSync(join(LIB, 'README.md'), join(out, 'README.md'));
  copyFileSync(join(ROOT, 'CHANGELOG.md'), join(out, 'CHANGELOG.md'));
  mkdirSync(dirname(out), { recursive: true });
  return { dir: out, version: chart.appVersion };
}

if (require.main === module) {
  buildSdkPackage(process.argv[2] ? resolve(process.argv[2]) : undefined).then(
    ({ dir, version }) => process.stdout.write(`@sandbox-scale/sdk ${version} built in ${dir}\n`),
    (err: unknown) => {
      process.stderr.write(`error: ${err instanceof Error ? err.message : String(err)}\n`);
      process.exitCode = 1;
    },
  );
}
