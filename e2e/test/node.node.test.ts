import { CoreV1Api, type V1Pod } from '@kubernetes/client-node';
import { execFileSync, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startControlPlane, type ControlPlane } from '../src/control-plane/control-plane';
import { scriptImage } from '../src/images/images';
import { eventually } from '../src/testing/eventually';

// The smallest workload on the real node: a locally built image runs as a non-root pod with a
// read-only root filesystem, passes its readiness probe, is reached through a Service from the
// host and from kube-apiserver, and itself reaches the API server; stop leaves nothing behind.

function httpGet(url: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request(url, { timeout: 5000 }, (res) => {
      let body = '';
      res.on('data', (c: Buffer) => (body += c.toString()));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.on('timeout', () => req.destroy(new Error('timeout')));
    req.on('error', reject);
    req.end();
  });
}

/** What of a run is still on the machine: processes naming its dir, mounts under it, its links, KUBE-/CNI- chains. */
/** KUBE-/CNI- iptables rules of the machine (other tools' CNI plugins may have made some before the node ran). */
function kubeAndCniRules(): string[] {
  const rules: string[] = [];
  for (const table of ['nat', 'filter', 'mangle']) {
    for (const rule of execFileSync('iptables', ['-w', '-t', table, '-S'], { encoding: 'utf8' }).split('\n')) {
      if (/KUBE-|CNI-/.test(rule)) rules.push(`iptables ${table}: ${rule}`);
    }
  }
  return rules;
}

/** Rules that were there before any node of this file started: not the node's to remove. */
const rulesBefore = new Set(kubeAndCniRules());

function leftovers(dir: string, links: string[]): string[] {
  const found: string[] = [];
  for (const pid of readdirSync('/proc').filter((n) => /^\d+$/.test(n))) {
    try {
      const cmd = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').join(' ');
      if (cmd.includes(`${dir}/`) && !cmd.includes('watchdog.cjs')) found.push(`process ${pid}: ${cmd.slice(0, 120)}`);
    } catch {
      /* exited */
    }
  }
  for (const line of readFileSync('/proc/self/mountinfo', 'utf8').split('\n')) {
    const mount = line.split(' ')[4];
    if (mount?.startsWith(`${dir}/`)) found.push(`mount ${mount}`);
  }
  const shown = execFileSync('ip', ['-o', 'link', 'show'], { encoding: 'utf8' });
  for (const link of links) if (shown.includes(` ${link}:`)) found.push(`link ${link}`);
  found.push(...kubeAndCniRules().filter((r) => !rulesBefore.has(r)));
  return found;
}

function nodeLinks(dir: string): string[] {
  const state = JSON.parse(readFileSync(join(dir, 'node-state.json'), 'utf8')) as { bridge: string; serviceLink: string };
  return [state.bridge, state.serviceLink];
}

describe('a real node in the local cluster', () => {
  let cp: ControlPlane | undefined;
  let out: string;

  beforeAll(async () => {
    out = mkdtempSync(join(tmpdir(), 'sandbox-scale-node-test-'));
    cp = await startControlPlane({ node: true, log: (m) => process.stderr.write(`[node-test] ${m}\n`) });
  }, 600_000);

  afterAll(async () => {
    await cp?.stop();
    rmSync(out, { recursive: true, force: true });
  });

  it('runs a locally built image, routes a Service to it, and stop leaves nothing behind', async () => {
    const plane = cp as ControlPlane;
    const node = plane.node;
    if (!node) throw new Error('startControlPlane({ node: true }) returned no node');
    const image = scriptImage('probe-server', join(__dirname, 'fixtures/probe-server.ts'), out);
    node.importImage(image.archive);

    const core = plane.kubeConfig.makeApiClient(CoreV1Api);
    const namespace = 'node-smoke';
    await core.createNamespace({ body: { metadata: { name: namespace } } });
    // ServiceAccount admission needs the namespace's default ServiceAccount (kube-controller-manager makes it)
    await eventually(() => core.readNamespacedServiceAccount({ name: 'default', namespace }), { timeoutMs: 60_000 });
    const labels = { app: 'probe-server' };
    await core.createNamespacedPod({
      namespace,
      body: {
        metadata: { name: 'probe-server', labels },
        spec: {
          securityContext: { runAsNonRoot: true, runAsUser: 65532, runAsGroup: 65532, seccompProfile: { type: 'RuntimeDefault' } },
          containers: [
            {
              name: 'server',
              image: image.name,
              imagePullPolicy: 'Never',
              ports: [{ name: 'http', containerPort: 8080 }],
              readinessProbe: { httpGet: { path: '/healthz', port: 'http' }, periodSeconds: 1 },
              securityContext: { allowPrivilegeEscalation: false, readOnlyRootFilesystem: true, capabilities: { drop: ['ALL'] } },
            },
          ],
        },
      },
    });
    await core.createNamespacedService({
      namespace,
      body: { metadata: { name: 'probe-server' }, spec: { selector: labels, ports: [{ name: 'http', port: 80, targetPort: 'http' }] } },
    });

    const pod = await eventually(
      async () => {
        const p: V1Pod = await core.readNamespacedPod({ name: 'probe-server', namespace });
        const ready = p.status?.conditions?.find((c) => c.type === 'Ready');
        if (ready?.status !== 'True')
          throw new Error(`pod not Ready: ${JSON.stringify(p.status?.containerStatuses ?? p.status?.conditions)}`);
        return p;
      },
      { timeoutMs: 120_000, intervalMs: 500 },
    );
    expect(pod.spec?.nodeName).toBe(node.name);
    const podIp = pod.status?.podIP ?? '';
    expect(podIp).toMatch(/^10\.244\.0\.\d+$/);

    // the Service's ClusterIP from the host, through kube-proxy's rules
    const svc = await core.readNamespacedService({ name: 'probe-server', namespace });
    const viaService = await eventually(() => httpGet(`http://${svc.spec?.clusterIP}/`), { timeoutMs: 60_000, intervalMs: 500 });
    expect(viaService).toEqual({ status: 200, body: 'pod probe-server' });

    // kube-apiserver reaches the pod through the Service (as it reaches an APIService)
    const viaApiserver = await eventually(
      async () => {
        const body = await core.connectGetNamespacedServiceProxy({ name: 'probe-server:http', namespace });
        return String(body);
      },
      { timeoutMs: 60_000, intervalMs: 500 },
    );
    expect(viaApiserver).toBe('pod probe-server');

    // the pod reaches kube-apiserver through the `kubernetes` Service with its own ServiceAccount token
    const fromPod = await eventually(
      async () => {
        const r = await httpGet(`http://${podIp}:8080/apiserver`);
        if (r.body !== '200') throw new Error(`pod -> kube-apiserver: ${r.body}`);
        return r.body;
      },
      { timeoutMs: 60_000, intervalMs: 1000 },
    );
    expect(fromPod).toBe('200');

    const links = nodeLinks(plane.dir);
    expect(leftovers(plane.dir, links).length).toBeGreaterThan(0); // the check sees a running node
    await plane.stop();
    cp = undefined;
    expect(leftovers(plane.dir, links)).toEqual([]);
  });

  it('leaves nothing behind when its owner is SIGKILLed with a pod running', async () => {
    const child = spawn(process.execPath, ['--import', 'tsx', join(__dirname, 'fixtures/start-and-wait.ts'), '--node'], {
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    const info = await new Promise<{ dir: string; pids: number[]; links: string[] }>((resolve, reject) => {
      let text = '';
      child.stdout.on('data', (c: Buffer) => {
        text += c.toString();
        if (text.includes('\n')) resolve(JSON.parse(text.split('\n')[0] as string) as { dir: string; pids: number[]; links: string[] });
      });
      child.once('exit', (code) => reject(new Error(`fixture exited early with ${code}`)));
    });
    expect(leftovers(info.dir, info.links).some((l) => l.startsWith('mount '))).toBe(true);
    child.kill('SIGKILL');
    await eventually(
      () => {
        for (const pid of info.pids) expect(() => process.kill(pid, 0)).toThrow();
        expect(existsSync(info.dir)).toBe(false);
        expect(leftovers(info.dir, info.links)).toEqual([]);
        expect(existsSync('/run/sandbox-scale-node.lock')).toBe(false);
      },
      { timeoutMs: 60_000, intervalMs: 500 },
    );
  });
});
