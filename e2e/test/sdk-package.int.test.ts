import { existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { basename, delimiter, join } from 'node:path';
import { parse as parseYaml } from 'yaml';
import { z } from 'zod';
import { builtSdkPackage, runSuffix } from '../src/index';
import { REPO_ROOT } from '../src/system/app-process';
import { runProcess, type RunResult } from '../src/system/run-command';
import { applyWarmPool, startSuiteSystem, waitPoolReady } from '../src/system/suite-system';
import type { SystemUnderTest, TenantCredentials } from '../src/system/system-under-test';
import { grantEditRole } from '../src/testing/tenant-role';

// @sandbox-scale/sdk as an agent builder gets it: the tarball `npm pack` makes, installed into an
// empty directory with no workspace and no tsx. Its plugin answers --help and version; a
// TypeScript program compiled by tsc against the package's own types claims a sandbox on the
// local system (what `npm start` runs), runs a command in it, copies a file in and out and
// releases it, as a tenant holding exactly the chart's edit role; CommonJS callers can require
// it; and the plugin claims, execs, copies, lists and releases from a shell. The plugin as Krew
// installs it passes krew-index's validation and runs from krew's bin directory.

const suffix = runSuffix();
const ns = `sdkpkg-${suffix}`;

const PackEntry = z.object({
  filename: z.string(),
  size: z.number().int().positive(),
  unpackedSize: z.number().int().positive(),
  files: z.array(z.object({ path: z.string() })),
});
const Manifest = z.object({ version: z.string() });

/** The program an agent builder writes: everything it needs comes from the package. */
const PROGRAM = `import { SandboxClient, SDK_VERSION, isNotFound, type ExecResult } from '@sandbox-scale/sdk';

async function main(): Promise<void> {
  // KUBECONFIG as kubectl reads it; the namespace the program is told to work in
  const client = new SandboxClient({ namespace: process.env.AGENT_NAMESPACE ?? 'default' });
  const sb = await client.claim({ pool: 'agent', timeoutMs: 120_000 });
  try {
    await sb.files.write('/work/in.txt', 'from the program\\n');
    const run: ExecResult = await sb.exec(['sh', '-c', 'tr a-z A-Z < in.txt > out.txt && cat out.txt'], { cwd: '/work' });
    const out = (await sb.files.read('/work/out.txt')).toString();
    const missing = await sb.files.read('/work/none').then(() => false, (e: unknown) => isNotFound(e));
    process.stdout.write(JSON.stringify({ version: SDK_VERSION, name: sb.name, run, out, missing }) + '\\n');
  } finally {
    await sb.release();
  }
}

main().catch((err: unknown) => {
  process.stderr.write(String(err) + '\\n');
  process.exit(1);
});
`;

const ProgramOutput = z.object({
  version: z.string(),
  name: z.string().min(1),
  run: z.object({ exitCode: z.number(), stdout: z.string(), stderr: z.string() }),
  out: z.string(),
  missing: z.boolean(),
});

let sys: SystemUnderTest;
let tenant: TenantCredentials;
let work: string;
/** The empty directory the tarball is installed into, as an agent builder's project. */
let project: string;
let version: string;
let tarball: z.infer<typeof PackEntry>;
let installMs: number;

const installedBin = (): string => join(project, 'node_modules/.bin');

/** A command run in the project, with its node_modules/.bin first on PATH, as `npx` would. */
function inProject(bin: string, args: string[], env: Record<string, string> = {}): Promise<RunResult> {
  return runProcess(bin, args, {
    PATH: `${installedBin()}${delimiter}${process.env.PATH ?? ''}`,
    KUBECONFIG: tenant.path,
    ...env,
  });
}

/** `kubectl sandbox ARGS` as the tenant: kubectl finds the installed plugin on PATH. */
const plugin = (args: string[]): Promise<RunResult> => inProject(join(sys.binDir, 'kubectl'), ['sandbox', ...args]);

/** A package the workspace pins, at the same version for the project (tsc and node's types). */
function workspaceVersion(name: string): string {
  return Manifest.parse(JSON.parse(readFileSync(join(REPO_ROOT, 'node_modules', name, 'package.json'), 'utf8'))).version;
}

async function npm(args: string[], cwd: string): Promise<string> {
  const r = await runProcess('npm', ['--prefix', cwd, '--no-audit', '--no-fund', '--loglevel=error', ...args]);
  if (r.code !== 0) throw new Error(`npm ${args.join(' ')} exited ${r.code}:\n${r.stdout}${r.stderr}`);
  return r.stdout;
}

beforeAll(async () => {
  work = mkdtempSync(join(tmpdir(), 'sdk-package-'));
  const built = await builtSdkPackage();
  version = Manifest.parse(JSON.parse(readFileSync(join(built.dir, 'package.json'), 'utf8'))).version;
  const packed = await runProcess('npm', ['pack', built.dir, '--json', '--pack-destination', work]);
  if (packed.code !== 0) throw new Error(`npm pack exited ${packed.code}: ${packed.stderr}`);
  const [entry] = z.array(PackEntry).parse(JSON.parse(packed.stdout));
  if (entry === undefined) throw new Error('npm pack made no tarball');
  tarball = entry;

  project = join(work, 'agent');
  mkdirSync(project);
  writeFileSync(join(project, 'package.json'), JSON.stringify({ name: 'agent', private: true, type: 'module' }));
  const started = performance.now();
  await npm(['install', join(work, tarball.filename)], project);
  installMs = performance.now() - started;

  sys = await startSuiteSystem({ namespaces: [ns], local: { nodes: 1, speed: 0, publishInterval: '1s' } });
  tenant = await sys.tenant(ns, 'editor');
  await grantEditRole(sys.kubeConfig, ns, 'editor');
  await applyWarmPool(sys, ns, { image: 'ghcr.io/example/python-agent:1', replicas: 3 });
  await waitPoolReady(sys, ns, 2, { atLeast: true, timeoutMs: 120_000 });
}, 300_000);

afterAll(async () => {
  await sys?.stop();
  if (work) rmSync(work, { recursive: true, force: true });
}, 120_000);

describe('@sandbox-scale/sdk from its tarball', () => {
  it('packs the built JavaScript, one declaration file and the plugin, and installs with nothing unpublished', () => {
    process.stdout.write(
      `@sandbox-scale/sdk ${version}: tarball ${tarball.size} bytes (${tarball.unpackedSize} unpacked, ${tarball.files.length} files); installed into an empty project in ${(installMs / 1000).toFixed(1)} s\n`,
    );
    expect(tarball.files.map((f) => f.path).sort()).toEqual([
      'CHANGELOG.md',
      'README.md',
      'bin/kubectl-sandbox',
      'bin/kubectl_complete-sandbox',
      'lib/cli.mjs',
      'lib/index.cjs',
      'lib/index.d.cts',
      'lib/index.d.mts',
      'lib/index.mjs',
      'package.json',
    ]);
    // a bundle of the SDK and what it takes from the workspace: kilobytes, not the workspace
    expect(tarball.size).toBeLessThan(512 * 1024);
    expect(installMs).toBeGreaterThan(0);
    const modules = readdirSync(join(project, 'node_modules'));
    expect(modules).toContain('@kubernetes');
    expect(modules).not.toContain('tsx');
    expect(readdirSync(join(project, 'node_modules/@sandbox-scale'))).toEqual(['sdk']);
    // the version is the chart's release
    expect(version).toBe(
      readFileSync(join(REPO_ROOT, 'charts/sandbox-scale/Chart.yaml'), 'utf8').match(/^appVersion:\s*"?([^"\s]+)"?$/m)?.[1],
    );
  });

  it('answers kubectl sandbox --help and version from the installed plugin', async () => {
    const help = await plugin(['--help']);
    expect(help.code).toBe(0);
    expect(help.stdout).toMatch(/^ {2}claim\s+claim a warm sandbox of a pool$/m);
    expect((await plugin(['cp', '--help'])).stdout).toMatch(/^Usage:\n {2}kubectl sandbox cp LOCAL NAME:PATH$/m);
    expect(await plugin(['version'])).toEqual({ code: 0, stdout: `kubectl-sandbox ${version}\n`, stderr: '' });
  });

  it('compiles a TypeScript program against the package types and runs it: claim, exec, files in and out, release', async () => {
    await npm(
      ['install', '--save-dev', `typescript@${workspaceVersion('typescript')}`, `@types/node@${workspaceVersion('@types/node')}`],
      project,
    );
    writeFileSync(join(project, 'agent.ts'), PROGRAM);
    writeFileSync(
      join(project, 'tsconfig.json'),
      JSON.stringify({
        compilerOptions: {
          target: 'ES2022',
          module: 'NodeNext',
          moduleResolution: 'NodeNext',
          strict: true,
          outDir: 'out',
          types: ['node'],
        },
        files: ['agent.ts'],
      }),
    );
    const tsc = await inProject(join(installedBin(), 'tsc'), ['-p', project]);
    expect({ code: tsc.code, out: tsc.stdout + tsc.stderr }).toEqual({ code: 0, out: '' });

    // a program that misuses the API does not compile: the types are the SDK's, not any
    writeFileSync(
      join(project, 'wrong.ts'),
      "import { SandboxClient } from '@sandbox-scale/sdk';\nvoid new SandboxClient().claim({ pool: 1 });\n",
    );
    const wrong = await inProject(join(installedBin(), 'tsc'), [
      '--noEmit',
      '--strict',
      '--module',
      'NodeNext',
      '--moduleResolution',
      'NodeNext',
      '--types',
      'node',
      join(project, 'wrong.ts'),
    ]);
    expect(wrong.code).not.toBe(0);
    expect(wrong.stdout).toMatch(/wrong\.ts\(2,\d+\): error TS2322: Type 'number' is not assignable to type 'string'/);

    const ran = await inProject(process.execPath, [join(project, 'out/agent.js')], { AGENT_NAMESPACE: ns });
    expect(ran.stderr).toBe('');
    expect(ran.code).toBe(0);
    const result = ProgramOutput.parse(JSON.parse(ran.stdout));
    expect(result).toEqual({
      version,
      name: result.name,
      run: { exitCode: 0, stdout: 'FROM THE PROGRAM\n', stderr: '' },
      out: 'FROM THE PROGRAM\n',
      missing: true,
    });
    // release deleted the claim
    const left = await plugin(['list', '-n', ns, '-o', 'json']);
    expect(left.code).toBe(0);
    expect(JSON.stringify(JSON.parse(left.stdout))).not.toContain(`"${result.name}"`);
  });

  it('loads from CommonJS with the same exports', async () => {
    // a file in the project, so require resolves from its node_modules as a user's script would
    const script = join(project, 'check.cjs');
    writeFileSync(
      script,
      "const s = require('@sandbox-scale/sdk');\nprocess.stdout.write([typeof s.SandboxClient, typeof s.isNotFound, s.SDK_VERSION].join(' '));\n",
    );
    expect(await inProject(process.execPath, [script])).toEqual({ code: 0, stdout: `function function ${version}`, stderr: '' });
  });

  it('claims, execs, copies, lists and releases with the installed plugin', async () => {
    const claimed = await plugin(['claim', 'agent', '-n', ns, '--wait', '--request-timeout', '120s']);
    expect(claimed.code).toBe(0);
    const name = /^sandbox\/(\S+) claimed$/m.exec(claimed.stdout)?.[1];
    expect(name).toMatch(/^agent-/);
    const sb = name ?? '';

    const input = join(work, 'notes.txt');
    writeFileSync(input, 'copied by the plugin\n');
    expect(await plugin(['cp', input, `${sb}:/work/notes.txt`, '-n', ns])).toEqual({ code: 0, stdout: '', stderr: '' });
    expect(await plugin(['exec', sb, '-n', ns, '--cwd', '/work', '--', 'sh', '-c', 'wc -l < notes.txt; exit 4'])).toEqual({
      code: 4,
      stdout: '1\n',
      stderr: '',
    });
    const back = join(work, 'back.txt');
    expect(await plugin(['cp', `${sb}:/work/notes.txt`, back, '-n', ns])).toEqual({ code: 0, stdout: '', stderr: '' });
    expect(readFileSync(back, 'utf8')).toBe('copied by the plugin\n');

    const listed = await plugin(['list', '-n', ns]);
    expect(listed.code).toBe(0);
    const row = listed.stdout.split('\n').find((l) => l.startsWith(`${sb} `));
    expect(row?.split(/\s+/).slice(0, 3)).toEqual([sb, 'agent', 'True']);

    expect(await plugin(['release', sb, '-n', ns])).toEqual({ code: 0, stdout: `sandbox/${sb} released\n`, stderr: '' });
    const after = await plugin(['list', '-n', ns]);
    expect(after.stdout.split('\n').some((l) => l.startsWith(`${sb} `))).toBe(false);
    expect(existsSync(join(project, 'node_modules/@sandbox-scale/sdk/bin/kubectl-sandbox'))).toBe(true);
  });
});

const KrewManifest = z.object({
  metadata: z.object({ name: z.literal('sandbox') }),
  spec: z.object({
    version: z.string(),
    platforms: z.array(z.object({ uri: z.string(), sha256: z.string().regex(/^[0-9a-f]{64}$/), bin: z.literal('kubectl-sandbox') })).min(1),
  }),
});

/** The Krew archive and manifest, built as the release builds them, naming where they are served. */
async function buildKrew(out: string, uriBase: string): Promise<z.infer<typeof KrewManifest>> {
  const r = await runProcess(join(REPO_ROOT, 'node_modules/.bin/tsx'), [
    join(REPO_ROOT, 'libs/sandbox-sdk/scripts/build-krew.ts'),
    out,
    '--uri-base',
    uriBase,
  ]);
  if (r.code !== 0) throw new Error(`build-krew exited ${r.code}: ${r.stderr}`);
  return KrewManifest.parse(parseYaml(readFileSync(join(out, 'sandbox.yaml'), 'utf8')));
}

describe('kubectl-sandbox through Krew', () => {
  let server: Server | undefined;
  afterAll(() => server?.close());

  it('builds the same archive twice, passes krew-index validation, and installs with kubectl krew', async () => {
    const served = join(work, 'krew-a');
    // the archive's address, as the release's download URL: a server on loopback here
    server = createServer((req, res) => {
      const file = join(served, basename(decodeURIComponent(new URL(req.url ?? '/', 'http://x').pathname)));
      if (!existsSync(file)) return void res.writeHead(404).end();
      res.writeHead(200, { 'content-type': 'application/gzip' }).end(readFileSync(file));
    });
    await new Promise<void>((ok) => server?.listen(0, '127.0.0.1', ok));
    const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}/download`;
    const first = await buildKrew(served, base);
    const again = await buildKrew(join(work, 'krew-b'), base);
    const archive = readdirSync(served).find((f) => f.endsWith('.tar.gz')) ?? '';
    const size = statSync(join(served, archive)).size;
    process.stdout.write(`krew archive ${archive}: ${size} bytes, sha256 ${first.spec.platforms[0]?.sha256 ?? ''}\n`);
    expect(first.spec.version).toBe(`v${version}`);
    expect(again.spec.platforms.map((p) => p.sha256)).toEqual(first.spec.platforms.map((p) => p.sha256));
    // one file with its dependencies bundled: megabytes, not node_modules
    expect(size).toBeLessThan(4 * 1024 * 1024);

    // no upgrade check: krew would ask GitHub for its latest release
    const env = { PATH: `${sys.binDir}${delimiter}${process.env.PATH ?? ''}`, HOME: work, KREW_NO_UPGRADE_CHECK: '1' };
    // krew-index's own check: the manifest's schema, then an install of every platform from its uri
    const validated = await runProcess(join(sys.binDir, 'validate-krew-manifest'), ['-manifest', join(served, 'sandbox.yaml')], env);
    expect({ code: validated.code, said: /all \d+ spec\.platforms installed fine/.test(validated.stderr + validated.stdout) }).toEqual({
      code: 0,
      said: true,
    });

    // a user's install: kubectl krew, then the plugin on PATH from krew's bin directory
    const krewRoot = join(work, 'krew-root');
    const installed = await runProcess(join(sys.binDir, 'kubectl'), ['krew', 'install', `--manifest=${join(served, 'sandbox.yaml')}`], {
      ...env,
      KREW_ROOT: krewRoot,
    });
    expect({ code: installed.code, err: installed.code === 0 ? '' : installed.stderr }).toEqual({ code: 0, err: '' });
    const userEnv = {
      PATH: `${join(krewRoot, 'bin')}${delimiter}${sys.binDir}${delimiter}${process.env.PATH ?? ''}`,
      KUBECONFIG: tenant.path,
    };
    expect(await runProcess(join(sys.binDir, 'kubectl'), ['sandbox', 'version'], userEnv)).toEqual({
      code: 0,
      stdout: `kubectl-sandbox ${version}\n`,
      stderr: '',
    });
    const listed = await runProcess(join(sys.binDir, 'kubectl'), ['sandbox', 'list', '-n', ns, '-o', 'name'], userEnv);
    expect({ code: listed.code, stderr: listed.stderr }).toEqual({ code: 0, stderr: '' });
  });
});
