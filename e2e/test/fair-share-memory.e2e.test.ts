import { request as httpsRequest, type RequestOptions } from 'node:https';
import type { KubeConfig } from '@kubernetes/client-node';
import { Agent, request } from 'undici';
import { runSuffix } from '../src/index';
import { applyWarmPool, claimReady, startSuiteSystem } from '../src/system/suite-system';
import type { SystemUnderTest } from '../src/system/system-under-test';
import { jsonOf, kubeRaw, type RawReply, type RawRequest } from '../src/testing/data-plane-requests';
import { samples } from '../src/testing/metric-names';
import { grantEditRole } from '../src/testing/tenant-role';

// One tenant cannot take sandbox-apiserver's memory: tenant A sends 50 execs at once that each
// print 8,000,000 NUL bytes (a node reply of 48 MB, six bytes per escaped NUL), and reads the
// answers slowly, while tenant B lists, gets, execs and copies files. Both hold exactly the chart's
// edit role. sandbox-apiserver's RSS stays under the chart's 512 MiB limit, it never restarts, A's
// excess is refused with 429 (its namespace's share of reply memory is full) and every request of
// B succeeds. The node's own exec memory (64 MiB, shared by all its sandboxes) answers 503 with
// Retry-After when it is full: that is the node's bound, which B honours as kubectl does.

const nsA = `fsa-${runSuffix()}`;
const nsB = `fsb-${runSuffix()}`;
const G = 'agents.x-k8s.io';
const base = (ns: string, name: string): string => `/apis/${G}/v1beta1/namespaces/${ns}/sandboxes/${name}`;
const MiB = 1 << 20;
/** The chart's memory limit of a sandbox-apiserver pod. */
const CHART_MEMORY_LIMIT = 512 * MiB;
const BURST = 50;
const NUL_BYTES = 8_000_000;

let sys: SystemUnderTest;
let tenantA: KubeConfig;
let tenantB: KubeConfig;

/**
 * An exec through kube-apiserver whose answer is read slowly: nothing for `stallMs`, then at the
 * socket's pace. Only its status and size are kept, so the test holds none of the output.
 */
async function slowExec(kc: KubeConfig, path: string, body: unknown, stallMs: number): Promise<{ status: number; bytes: number }> {
  const cluster = kc.getCurrentCluster();
  if (!cluster) throw new Error('kubeconfig has no current cluster');
  const u = new URL(`${cluster.server}${path}`);
  const payload = JSON.stringify(body);
  const opts: RequestOptions = {
    hostname: u.hostname,
    port: u.port,
    path: u.pathname,
    method: 'POST',
    headers: { 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(payload)) },
    agent: false,
  };
  await kc.applyToHTTPSOptions(opts);
  return new Promise((resolve, reject) => {
    const req = httpsRequest(opts, (res) => {
      let bytes = 0;
      res.pause();
      setTimeout(() => {
        res.on('data', (c: Buffer) => (bytes += c.length));
        res.resume();
      }, stallMs);
      res.on('end', () => resolve({ status: res.statusCode ?? 0, bytes }));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(payload);
  });
}

/** A request of tenant B; a 503 with Retry-After (the node's exec memory is full) is retried as kubectl would. */
async function asB(r: RawRequest, retried: { count: number }): Promise<RawReply> {
  for (let attempt = 0; ; attempt++) {
    const reply = await kubeRaw(tenantB, r);
    const retryAfter = Number(reply.headers['retry-after']);
    if (reply.status !== 503 || !Number.isFinite(retryAfter) || attempt >= 20) return reply;
    retried.count++;
    await new Promise((ok) => setTimeout(ok, Math.max(retryAfter, 0.2) * 1000));
  }
}

/** The largest resident set of any sandbox-apiserver replica right now. */
async function apiserverRss(dispatcher: Agent, token: string): Promise<number> {
  const pages = await Promise.all(
    sys.apiserverUrls.map(async (url) => {
      const r = await request(`${url}/metrics`, { dispatcher, headers: { authorization: `Bearer ${token}` } });
      return r.body.text();
    }),
  );
  return Math.max(...pages.flatMap((p) => samples(p, 'process_resident_memory_bytes').map((s) => s.value)));
}

beforeAll(async () => {
  sys = await startSuiteSystem({ namespaces: [nsA, nsB], local: { nodes: 1, speed: 0.02, publishInterval: '1s' } });
  tenantA = (await sys.tenant(nsA, 'agent')).kubeConfig;
  await grantEditRole(sys.kubeConfig, nsA, 'agent');
  tenantB = (await sys.tenant(nsB, 'agent')).kubeConfig;
  await grantEditRole(sys.kubeConfig, nsB, 'agent');
  await applyWarmPool(sys, nsA, { image: 'ghcr.io/example/fair-a:1.0', replicas: 1 });
  await applyWarmPool(sys, nsB, { image: 'ghcr.io/example/fair-b:1.0', replicas: 1 });
  await claimReady(sys, nsA, 'loud');
  await claimReady(sys, nsB, 'quiet');
}, 300_000);

afterAll(async () => {
  await sys?.stop();
}, 60_000);

describe('reply memory is shared fairly', () => {
  it("bounds one tenant's exec output while another tenant's requests all succeed", async () => {
    const exitedBefore = await sys.appsThatExited();
    const dispatcher = new Agent({ connect: { ca: sys.servingCa, servername: sys.servernameOf(sys.apiserverUrl) } });
    const token = await sys.metricsReaderToken();
    const before = await apiserverRss(dispatcher, token);
    let peak = before;
    let bursting = true;
    const sampler = (async () => {
      while (bursting) {
        peak = Math.max(peak, await apiserverRss(dispatcher, token));
        await new Promise((ok) => setTimeout(ok, 100));
      }
    })();

    const loud = Promise.all(
      Array.from({ length: BURST }, (_, i) =>
        slowExec(tenantA, `${base(nsA, 'loud')}/exec`, { argv: ['head', '-c', String(NUL_BYTES), '/dev/zero'] }, 1000 + (i % 5) * 500),
      ),
    );
    // tenant B meanwhile: list, get, exec and a file in and out, over and over until A's burst is over
    const retried = { count: 0 };
    const quiet: { op: string; status: number }[] = [];
    let loudDone = false;
    void loud.finally(() => (loudDone = true));
    for (let round = 0; round < 3 || !loudDone; round++) {
      const list = await asB({ method: 'GET', path: `/apis/${G}/v1beta1/namespaces/${nsB}/sandboxes` }, retried);
      const get = await asB({ method: 'GET', path: base(nsB, 'quiet') }, retried);
      const exec = await asB(
        {
          method: 'POST',
          path: `${base(nsB, 'quiet')}/exec`,
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ argv: ['sh', '-c', `echo round ${round}`] }),
        },
        retried,
      );
      const content = `file of round ${round}\n`;
      const put = await asB({ method: 'PUT', path: `${base(nsB, 'quiet')}/files?path=/work/r.txt`, body: content }, retried);
      const read = await asB({ method: 'GET', path: `${base(nsB, 'quiet')}/files?path=/work/r.txt` }, retried);
      quiet.push(
        { op: 'list', status: list.status },
        { op: 'get', status: get.status },
        { op: 'exec', status: exec.status },
        { op: 'put', status: put.status },
        { op: 'read', status: read.status },
      );
      expect({ round, stdout: jsonOf<{ stdout: string }>(exec).stdout, read: read.body.toString() }).toEqual({
        round,
        stdout: `round ${round}\n`,
        read: content,
      });
    }
    const answers = await loud;
    bursting = false;
    await sampler;

    const byCode = new Map<number, number>();
    for (const a of answers) byCode.set(a.status, (byCode.get(a.status) ?? 0) + 1);
    const codes = Object.fromEntries([...byCode].sort(([x], [y]) => x - y));
    const served = answers.filter((a) => a.status === 200);
    process.stdout.write(
      `[fair-share] ${sys.target}: sandbox-apiserver RSS ${(before / MiB).toFixed(0)} MiB before, peak ${(peak / MiB).toFixed(0)} MiB ` +
        `(limit ${CHART_MEMORY_LIMIT / MiB} MiB); tenant A's ${BURST} execs by code ${JSON.stringify(codes)}; ` +
        `tenant B ${quiet.length} requests, all served, ${retried.count} retried after a node 503\n`,
    );
    // every answer A got is a served exec or a refusal that says retry (429: its share; 503: the node's)
    expect([...byCode.keys()].filter((c) => ![200, 429, 503].includes(c))).toEqual([]);
    // the server's share refused some of them, and what it served came whole: 8,000,000 NULs, escaped
    expect(byCode.get(429) ?? 0).toBeGreaterThan(0);
    for (const s of served) expect(s.bytes).toBeGreaterThan(6 * NUL_BYTES);
    expect(quiet.filter((q) => q.status !== (q.op === 'put' ? 201 : 200))).toEqual([]);
    expect(peak).toBeLessThan(CHART_MEMORY_LIMIT);
    expect(await sys.appsThatExited()).toEqual(exitedBefore);
    await dispatcher.close();
  }, 600_000);

  it("answers 413 naming the API's cap for output past it, without holding it", async () => {
    // 9 MiB of output is past both caps: the node stops the command at 8 MiB and the API names its own
    const r = await kubeRaw(tenantA, {
      method: 'POST',
      path: `${base(nsA, 'loud')}/exec`,
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ argv: ['head', '-c', String(9 * MiB), '/dev/zero'] }),
    });
    expect({ status: r.status, reason: jsonOf<{ reason: string }>(r).reason }).toEqual({ status: 413, reason: 'RequestEntityTooLarge' });
    expect(jsonOf<{ message: string }>(r).message).toContain(`sandbox ${nsA}/loud`);
    expect(jsonOf<{ message: string }>(r).message).toContain(`cap of ${8 * MiB} bytes (--max-exec-output-bytes)`);
  });
});
