#!/usr/bin/env node
// Builds the Go binaries the local control plane runs (kube-apiserver, kube-controller-manager,
// kubectl, etcd, helm, krew, helm-docs, an OCI registry) from the Go module proxy at pinned versions, cached outside the repo.
// Usage: node e2e/tools/tools.mjs path   -> builds what is missing, prints the bin dir (last line)
//        node e2e/tools/tools.mjs check  -> exits 1 when something is missing, builds nothing
//        node e2e/tools/tools.mjs node   -> also the node: kubelet, kube-scheduler, kube-proxy and a
//                                           pause binary built here, containerd/runc/CNI/iptables/buildah
//                                           from Debian packages (apt-get, as root)
//        node e2e/tools/tools.mjs check-node -> exits 1 when a node part is missing
//        node e2e/tools/tools.mjs monitoring -> also Prometheus (the Debian package's binary, unpacked,
//                                           never installed as a service) and prometheus-adapter
//                                           built from the Go module proxy: the HPA suite's metrics path
//        node e2e/tools/tools.mjs upstream -> also the node, and kubernetes-sigs/agent-sandbox's controller
//                                           built from the Go module proxy at a pinned release: bench:upstream
// The node tools build under their own lock, so `path` never waits on a kubelet build.
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, writeFileSync, openSync, closeSync, unlinkSync, statSync, renameSync } from 'node:fs';
import { homedir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const versions = JSON.parse(readFileSync(join(here, 'versions.json'), 'utf8'));
const cacheRoot = process.env.SANDBOX_SCALE_CACHE ?? join(process.env.XDG_CACHE_HOME ?? join(homedir(), '.cache'), 'sandbox-scale');
const binDir = join(cacheRoot, 'bin');
const buildRoot = join(cacheRoot, 'build');

const k8sMinor = versions.kubernetes.replace(/^v1\.(\d+)\..*$/, '$1');
const stagingVersion = versions.kubernetes.replace(/^v1\./, 'v0.');

/** binary name -> file in binDir; the version is part of the name so a bump rebuilds. */
const binaries = {
  'kube-apiserver': `kube-apiserver-${versions.kubernetes}`,
  'kube-controller-manager': `kube-controller-manager-${versions.kubernetes}`,
  kubectl: `kubectl-${versions.kubernetes}`,
  etcd: `etcd-${versions.etcd}`,
  helm: `helm-${versions.helm}`,
  // Krew, to install the plugin as its users do, and krew-index's own manifest check
  'kubectl-krew': `kubectl-krew-${versions.krew}`,
  'validate-krew-manifest': `validate-krew-manifest-${versions.krew}`,
  // the chart's README, generated from values.yaml's comments (and drift-tested)
  'helm-docs': `helm-docs-${versions.helmDocs}`,
  // go-containerregistry's registry: the OCI registry a release is pushed to and the node pulls from
  registry: `registry-${versions.goContainerregistry}`,
  // ShellCheck (Debian's package, unpacked): the kind script's check
  shellcheck: `shellcheck-${versions.shellcheck}`,
};

/** Built only when a node is asked for (`node`): a slow build nobody else should wait on. */
const nodeBinaries = {
  kubelet: `kubelet-${versions.kubernetes}`,
  'kube-scheduler': `kube-scheduler-${versions.kubernetes}`,
  'kube-proxy': `kube-proxy-${versions.kubernetes}`,
  pause: `pause-${versions.pause}`,
};

/** Built only for bench:upstream (`upstream`): agent-sandbox's controller, measured beside ours. */
const upstreamBinaries = {
  'agent-sandbox-controller': `agent-sandbox-controller-${versions.agentSandbox}`,
};

/** Built or unpacked only when the monitoring path is asked for (`monitoring`): the HPA suite's. */
const monitoringBinaries = {
  prometheus: `prometheus-${versions.prometheus}`,
  // the same Debian package's rule checker and rule unit-test runner
  promtool: `promtool-${versions.prometheus}`,
  'prometheus-adapter': `prometheus-adapter-${versions.prometheusAdapter}`,
};

/** Debian package -> a file it installs, to tell whether it is there without asking apt. */
const nodePackages = {
  containerd: '/usr/bin/containerd',
  runc: '/usr/sbin/runc',
  iptables: '/usr/sbin/iptables',
  'containernetworking-plugins': '/usr/lib/cni/bridge',
  buildah: '/usr/bin/buildah',
};

function log(msg) {
  process.stderr.write(`[tools] ${msg}\n`);
}

function run(cmd, args, cwd, extraEnv = {}) {
  log(`${cwd}$ ${cmd} ${args.join(' ')}`);
  const env = { ...process.env, GOFLAGS: '-mod=mod', GOTOOLCHAIN: 'local', CGO_ENABLED: '0', ...extraEnv };
  if (cmd === 'go' && (args[0] === 'build' || args[0] === 'install')) return runWithProgress(args, cwd, env);
  execFileSync(cmd, args, { cwd, stdio: ['ignore', 'inherit', 'inherit'], env });
}

/**
 * A go build or install with -v, its package lines counted by build-progress.mjs, which prints a
 * heartbeat (packages so far, the last one, elapsed time) instead of minutes of silence;
 * pipefail keeps go's exit status.
 */
function runWithProgress(args, cwd, env) {
  const label = `go ${args[0]} ${args
    .filter((a) => /^[\w.-]+\.[\w.-]+\//.test(a))
    .map((a) => a.split('/').pop())
    .join(', ')}`;
  const script = 'set -o pipefail; "$@" 2>&1 | "$NODE_BIN" "$PROGRESS" "$LABEL"';
  execFileSync('bash', ['-c', script, 'go', 'go', args[0], '-v', ...args.slice(1)], {
    cwd,
    stdio: ['ignore', 'inherit', 'inherit'],
    env: { ...env, NODE_BIN: process.execPath, PROGRESS: join(here, 'build-progress.mjs'), LABEL: label },
  });
}

function goModPath(module, version) {
  const out = execFileSync('go', ['mod', 'download', '-json', `${module}@${version}`], {
    encoding: 'utf8',
    env: { ...process.env, GOFLAGS: '' },
  });
  return JSON.parse(out).GoMod;
}

function versionLdflags() {
  const pkgs = ['k8s.io/component-base/version', 'k8s.io/client-go/pkg/version'];
  const vars = {
    gitVersion: versions.kubernetes,
    gitMajor: '1',
    gitMinor: k8sMinor,
    gitTreeState: 'clean',
    buildDate: '2025-01-01T00:00:00Z',
  };
  const flags = ['-s', '-w'];
  for (const p of pkgs) for (const [k, v] of Object.entries(vars)) flags.push(`-X ${p}.${k}=${v}`);
  return flags.join(' ');
}

// k8s.io/kubernetes replaces its staging modules with local paths, which `go install` refuses;
// pin each to the published module of the same release instead, reading the list from its go.mod.
function writeKubernetesGoMod(dir, moduleName) {
  const upstream = readFileSync(goModPath('k8s.io/kubernetes', versions.kubernetes), 'utf8');
  const staging = [...upstream.matchAll(/^\s*(k8s\.io\/[\w.-]+)\s*=>\s*\.\/staging\//gm)].map((m) => m[1]);
  const goVersion = upstream.match(/^go (\S+)/m)?.[1] ?? '1.24.0';
  const lines = [
    `module ${moduleName}`,
    '',
    `go ${goVersion}`,
    '',
    `require k8s.io/kubernetes ${versions.kubernetes}`,
    '',
    ...staging.map((m) => `replace ${m} => ${m} ${stagingVersion}`),
    '',
  ];
  writeFileSync(join(dir, 'go.mod'), lines.join('\n'));
}

function buildKubernetes() {
  const dir = join(buildRoot, `kubernetes-${versions.kubernetes}`);
  mkdirSync(dir, { recursive: true });
  writeKubernetesGoMod(dir, 'sandbox-scale/kubernetes-build');
  log(`building kube-apiserver, kube-controller-manager, kubectl ${versions.kubernetes} (several minutes on 2 cores)`);
  const out = join(dir, 'out');
  mkdirSync(out, { recursive: true });
  run(
    'go',
    [
      'build',
      '-trimpath',
      '-ldflags',
      versionLdflags(),
      '-o',
      out + '/',
      'k8s.io/kubernetes/cmd/kube-apiserver',
      'k8s.io/kubernetes/cmd/kube-controller-manager',
      'k8s.io/kubernetes/cmd/kubectl',
    ],
    dir,
  );
  for (const name of ['kube-apiserver', 'kube-controller-manager', 'kubectl']) install(join(out, name), name);
}

function buildEtcd() {
  const dir = join(buildRoot, `etcd-${versions.etcd}`);
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, 'go.mod'), `module sandbox-scale/etcd-build\n\ngo 1.24\n\nrequire go.etcd.io/etcd/server/v3 ${versions.etcd}\n`);
  writeFileSync(
    join(dir, 'main.go'),
    'package main\n\nimport (\n\t"os"\n\n\t"go.etcd.io/etcd/server/v3/etcdmain"\n)\n\nfunc main() { etcdmain.Main(os.Args) }\n',
  );
  log(`building etcd ${versions.etcd}`);
  run('go', ['mod', 'tidy'], dir, { GOFLAGS: '' });
  run('go', ['build', '-trimpath', '-ldflags', '-s -w', '-o', join(dir, 'etcd'), '.'], dir);
  install(join(dir, 'etcd'), 'etcd');
}

function buildHelm() {
  const dir = join(buildRoot, `helm-${versions.helm}`);
  mkdirSync(dir, { recursive: true });
  log(`building helm ${versions.helm}`);
  const ldflags = `-s -w -X helm.sh/helm/v3/internal/version.version=${versions.helm}`;
  run('go', ['install', '-trimpath', '-ldflags', ldflags, `helm.sh/helm/v3/cmd/helm@${versions.helm}`], dir, { GOBIN: dir, GOFLAGS: '' });
  install(join(dir, 'helm'), 'helm');
}

function buildNodeKubernetes(todo) {
  // Its own module directory: `-mod=mod` adds go.sum entries the kubelet needs, which must not
  // change the go.sum the control-plane build reads while another build may be running.
  const dir = join(buildRoot, `kubernetes-node-${versions.kubernetes}`);
  mkdirSync(dir, { recursive: true });
  writeKubernetesGoMod(dir, 'sandbox-scale/kubernetes-node-build');
  const names = ['kubelet', 'kube-scheduler', 'kube-proxy'].filter((n) => todo.includes(n));
  log(`building ${names.join(', ')} ${versions.kubernetes} (about 10 minutes on 2 cores)`);
  const out = join(dir, 'out');
  mkdirSync(out, { recursive: true });
  run('go', ['build', '-trimpath', '-ldflags', versionLdflags(), '-o', out + '/', ...names.map((n) => `k8s.io/kubernetes/cmd/${n}`)], dir);
  for (const name of names) install(join(out, name), name);
}

function buildPause() {
  // The pod sandbox image's only process: no image can be pulled here, so it is built locally.
  const dir = join(buildRoot, `pause-${versions.pause}`);
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, 'go.mod'), 'module sandbox-scale/pause\n\ngo 1.22\n');
  writeFileSync(
    join(dir, 'main.go'),
    [
      'package main',
      '',
      'import (',
      '\t"os"',
      '\t"os/signal"',
      '\t"syscall"',
      ')',
      '',
      "// Holds the pod's namespaces until the kubelet stops the sandbox.",
      'func main() {',
      '\tc := make(chan os.Signal, 1)',
      '\tsignal.Notify(c, syscall.SIGTERM, syscall.SIGINT)',
      '\t<-c',
      '}',
      '',
    ].join('\n'),
  );
  log('building pause');
  run('go', ['build', '-trimpath', '-ldflags', '-s -w', '-o', join(dir, 'pause'), '.'], dir, { GOFLAGS: '' });
  install(join(dir, 'pause'), 'pause');
}

/**
 * Binaries from a Debian package, unpacked into the cache: `apt-get download` as any user, no
 * dpkg install, so no service starts and nothing outside the cache changes. A stale package list
 * is refreshed once (root only). The package's upstream version must be the pinned one.
 */
function unpackDebian({ pkg, version: pinned, files }) {
  const dir = join(buildRoot, `${pkg}-${pinned}`);
  execFileSync('rm', ['-rf', dir]);
  mkdirSync(dir, { recursive: true });
  log(`downloading Debian's ${pkg} package (apt-get download) for ${pkg} ${pinned}`);
  const download = () =>
    execFileSync('apt-get', ['-o', 'APT::Sandbox::User=root', 'download', pkg], {
      cwd: dir,
      stdio: ['ignore', 'ignore', 'inherit'],
    });
  try {
    download();
  } catch (err) {
    if (process.getuid?.() !== 0) throw new Error(`apt-get download ${pkg} failed (${err.message}); run apt-get update as root first`);
    log('$ apt-get update');
    execFileSync('apt-get', ['update'], {
      stdio: ['ignore', 'inherit', 'inherit'],
      env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' },
    });
    download();
  }
  const deb = execFileSync('bash', ['-c', `ls ${pkg}_*.deb`], { cwd: dir, encoding: 'utf8' }).trim();
  const version = execFileSync('dpkg-deb', ['-f', deb, 'Version'], { cwd: dir, encoding: 'utf8' }).trim();
  const upstream = version.replace(/^\d+:/, '');
  if (!upstream.startsWith(`${pinned}+`) && !upstream.startsWith(`${pinned}-`) && upstream !== pinned)
    throw new Error(`Debian's ${pkg} package is ${version}, not ${pinned}: update versions.json`);
  execFileSync('dpkg-deb', ['-x', deb, 'root'], { cwd: dir });
  log(`unpacked ${pkg} ${version}`);
  for (const [from, name] of files) install(join(dir, 'root', from), name);
}

/** Prometheus and promtool, from Debian's prometheus package. */
function unpackPrometheus() {
  unpackDebian({
    pkg: 'prometheus',
    version: versions.prometheus,
    files: [
      ['usr/bin/prometheus', 'prometheus'],
      ['usr/bin/promtool', 'promtool'],
    ],
  });
}

/** ShellCheck, from Debian's package: the repository's shell scripts are checked with it. */
function unpackShellcheck() {
  unpackDebian({ pkg: 'shellcheck', version: versions.shellcheck, files: [['usr/bin/shellcheck', 'shellcheck']] });
}

/**
 * Go binaries from one pinned module, built in a module of its own that requires that release
 * (`dir` under the build root): `go install module@version` also asks the proxy for the module's
 * version list (its deprecation check), which a proxy may refuse (403) while it serves the pinned
 * version. Each binary is built from its package and installed under its name.
 */
function buildPinned({ dir, module, version, go = '1.22.1', note = '', binaries }) {
  const at = join(buildRoot, dir);
  mkdirSync(at, { recursive: true });
  const name = dir.replace(/-v?[\d.]+$/, '');
  writeFileSync(join(at, 'go.mod'), `module sandbox-scale/${name}-build\n\ngo ${go}\n\nrequire ${module} ${version}\n`);
  log(`building ${binaries.map((b) => b.bin).join(', ')} from ${module} ${version}${note}`);
  for (const b of binaries)
    run('go', ['build', '-trimpath', '-ldflags', `-s -w${b.ldflags ? ` ${b.ldflags}` : ''}`, '-o', join(at, b.bin), b.pkg], at);
  for (const b of binaries) install(join(at, b.bin), b.installAs ?? b.bin);
}

/** sigs.k8s.io/prometheus-adapter's adapter. */
function buildPrometheusAdapter() {
  buildPinned({
    dir: `prometheus-adapter-${versions.prometheusAdapter}`,
    module: 'sigs.k8s.io/prometheus-adapter',
    version: versions.prometheusAdapter,
    note: ' (about 3 minutes on 2 cores)',
    binaries: [{ pkg: 'sigs.k8s.io/prometheus-adapter/cmd/adapter', bin: 'adapter', installAs: 'prometheus-adapter' }],
  });
}

/** sigs.k8s.io/agent-sandbox's controller (its extensions included behind --extensions). */
function buildAgentSandbox() {
  buildPinned({
    dir: `agent-sandbox-${versions.agentSandbox}`,
    module: 'sigs.k8s.io/agent-sandbox',
    version: versions.agentSandbox,
    go: '1.26.0',
    note: ' (a few minutes on 2 cores)',
    binaries: [{ pkg: 'sigs.k8s.io/agent-sandbox/cmd/agent-sandbox-controller', bin: 'agent-sandbox-controller' }],
  });
}

/** sigs.k8s.io/krew's plugin and manifest validator. */
function buildKrew() {
  buildPinned({
    dir: `krew-${versions.krew}`,
    module: 'sigs.k8s.io/krew',
    version: versions.krew,
    binaries: [
      { pkg: 'sigs.k8s.io/krew/cmd/krew', bin: 'kubectl-krew', ldflags: `-X sigs.k8s.io/krew/internal/version.gitTag=${versions.krew}` },
      { pkg: 'sigs.k8s.io/krew/cmd/validate-krew-manifest', bin: 'validate-krew-manifest' },
    ],
  });
}

/** norwoodj/helm-docs: the chart's README from values.yaml's comments. */
function buildHelmDocs() {
  buildPinned({
    dir: `helm-docs-${versions.helmDocs}`,
    module: 'github.com/norwoodj/helm-docs',
    version: versions.helmDocs,
    binaries: [{ pkg: 'github.com/norwoodj/helm-docs/cmd/helm-docs', bin: 'helm-docs' }],
  });
}

/** go-containerregistry's `registry` (an OCI distribution registry). */
function buildRegistry() {
  buildPinned({
    dir: `go-containerregistry-${versions.goContainerregistry}`,
    module: 'github.com/google/go-containerregistry',
    version: versions.goContainerregistry,
    go: '1.25.0',
    binaries: [{ pkg: 'github.com/google/go-containerregistry/cmd/registry', bin: 'registry' }],
  });
}

function missingPackages() {
  return Object.entries(nodePackages)
    .filter(([, file]) => !existsSync(file))
    .map(([p]) => p);
}

function installPackages() {
  const todo = missingPackages();
  if (todo.length === 0) return;
  if (process.getuid?.() !== 0) {
    throw new Error(
      `the node needs the Debian packages ${todo.join(', ')}; installing them takes root (run as root, or: apt-get install -y ${todo.join(' ')})`,
    );
  }
  log(`installing Debian packages ${todo.join(', ')} (apt-get update, then apt-get install)`);
  const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
  for (const args of [['update'], ['install', '-y', '--no-install-recommends', ...todo]]) {
    log(`$ apt-get ${args.join(' ')}`);
    try {
      execFileSync('apt-get', args, { stdio: ['ignore', 'inherit', 'inherit'], env });
    } catch (err) {
      throw new Error(
        `apt-get ${args.join(' ')} failed (${err.status === undefined ? err.message : `exit ${err.status}`}); the node cannot run without ${todo.join(', ')}`,
      );
    }
  }
  const still = missingPackages();
  if (still.length)
    throw new Error(`apt-get installed, yet these are still missing: ${still.map((p) => `${p} (${nodePackages[p]})`).join(', ')}`);
}

function install(src, name) {
  const file = binaries[name] ?? nodeBinaries[name] ?? monitoringBinaries[name] ?? upstreamBinaries[name];
  const dest = join(binDir, file);
  const tmp = `${dest}.tmp-${process.pid}`;
  execFileSync('cp', [src, tmp]);
  renameSync(tmp, dest);
  // a stable name beside the versioned one, so PATH=<binDir> works for humans and scripts.
  const link = join(binDir, name);
  try {
    unlinkSync(link);
  } catch {
    /* absent */
  }
  execFileSync('ln', ['-s', file, link]);
  log(`installed ${dest}`);
}

function missing(set = binaries) {
  return Object.entries(set)
    .filter(([name, file]) => !existsSync(join(binDir, file)) || !existsSync(join(binDir, name)))
    .map(([n]) => n);
}

function withLock(fn, lockName = 'build.lock') {
  mkdirSync(cacheRoot, { recursive: true });
  const lock = join(cacheRoot, lockName);
  for (let waited = 0; ; waited++) {
    try {
      closeSync(openSync(lock, 'wx'));
      writeFileSync(lock, String(process.pid));
      break;
    } catch {
      const holder = Number(readFileSync(lock, 'utf8') || '0');
      let alive = false;
      try {
        if (holder) {
          process.kill(holder, 0);
          alive = true;
        }
      } catch {
        alive = false;
      }
      if (!alive && Date.now() - statSync(lock).mtimeMs > 2000) {
        unlinkSync(lock);
        continue;
      }
      if (waited % 30 === 0) log(`another build holds ${lock} (pid ${holder}); waiting`);
      execFileSync('sleep', ['1']);
    }
  }
  try {
    return fn();
  } finally {
    try {
      unlinkSync(lock);
    } catch {
      /* gone */
    }
  }
}

function ensure() {
  mkdirSync(binDir, { recursive: true });
  if (missing().length === 0) return;
  withLock(() => {
    const todo = missing();
    const started = Date.now();
    if (todo.some((n) => ['kube-apiserver', 'kube-controller-manager', 'kubectl'].includes(n))) buildKubernetes();
    if (todo.includes('etcd')) buildEtcd();
    if (todo.includes('helm')) buildHelm();
    if (todo.includes('kubectl-krew') || todo.includes('validate-krew-manifest')) buildKrew();
    if (todo.includes('helm-docs')) buildHelmDocs();
    if (todo.includes('registry')) buildRegistry();
    if (todo.includes('shellcheck')) unpackShellcheck();
    log(`built ${todo.join(', ')} in ${Math.round((Date.now() - started) / 1000)} s`);
  });
}

function ensureNode() {
  installPackages();
  if (missing(nodeBinaries).length === 0) return;
  withLock(() => {
    const todo = missing(nodeBinaries);
    const started = Date.now();
    if (todo.some((n) => n !== 'pause')) buildNodeKubernetes(todo);
    if (todo.includes('pause')) buildPause();
    log(`built ${todo.join(', ')} in ${Math.round((Date.now() - started) / 1000)} s`);
  }, 'node-build.lock');
}

function ensureMonitoring() {
  mkdirSync(binDir, { recursive: true });
  if (missing(monitoringBinaries).length === 0) return;
  withLock(() => {
    const todo = missing(monitoringBinaries);
    const started = Date.now();
    if (todo.includes('prometheus') || todo.includes('promtool')) unpackPrometheus();
    if (todo.includes('prometheus-adapter')) buildPrometheusAdapter();
    log(`built ${todo.join(', ')} in ${Math.round((Date.now() - started) / 1000)} s`);
  }, 'monitoring-build.lock');
}

function ensureUpstream() {
  mkdirSync(binDir, { recursive: true });
  if (missing(upstreamBinaries).length === 0) return;
  withLock(() => {
    if (missing(upstreamBinaries).length === 0) return;
    const started = Date.now();
    buildAgentSandbox();
    log(`built agent-sandbox-controller in ${Math.round((Date.now() - started) / 1000)} s`);
  }, 'upstream-build.lock');
}

const cmd = process.argv[2] ?? 'path';
if (cmd === 'path') {
  ensure();
  process.stdout.write(`${binDir}\n`);
} else if (cmd === 'check') {
  const m = missing();
  if (m.length) {
    log(`missing: ${m.join(', ')}`);
    process.exit(1);
  }
  process.stdout.write(`${binDir}\n`);
} else if (cmd === 'node') {
  try {
    ensure();
    ensureNode();
  } catch (err) {
    log(`cannot provide the node: ${err.message}`);
    process.exit(1);
  }
  process.stdout.write(`${binDir}\n`);
} else if (cmd === 'check-node') {
  const m = [...missing(), ...missing(nodeBinaries), ...missingPackages()];
  if (m.length) {
    log(`missing: ${m.join(', ')}`);
    process.exit(1);
  }
  process.stdout.write(`${binDir}\n`);
} else if (cmd === 'monitoring') {
  ensure();
  ensureMonitoring();
  process.stdout.write(`${binDir}\n`);
} else if (cmd === 'upstream') {
  try {
    ensure();
    ensureNode();
    ensureUpstream();
  } catch (err) {
    log(`cannot provide agent-sandbox's controller and the node: ${err.message}`);
    process.exit(1);
  }
  process.stdout.write(`${binDir}\n`);
} else if (cmd === 'check-monitoring') {
  const m = [...missing(), ...missing(monitoringBinaries)];
  if (m.length) {
    log(`missing: ${m.join(', ')}`);
    process.exit(1);
  }
  process.stdout.write(`${binDir}\n`);
} else if (cmd === 'versions') {
  process.stdout.write(`${JSON.stringify(versions)}\n`);
} else {
  process.stderr.write('usage: tools.mjs path|check|node|check-node|monitoring|check-monitoring|upstream|versions\n');
  process.exit(2);
}
