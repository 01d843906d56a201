import { SandboxClient } from '../client';
import { NotFoundError } from '../errors';
import type { Sandbox } from '../sandbox';
import { writeTokenFile } from './token-file';
import type { Invocation } from './args';
import { isDataPlaneCommand, runDataPlane, type DataPlaneIo } from './data-plane-commands';
import { listing } from './list-command';
import { age, CLAIM_RESOURCE, render, SANDBOX_RESOURCE, structured, type Printable } from './output';

/** Where a command writes; the token goes to stdout only when asked for. */
export type Io = DataPlaneIo;

function clientOf(inv: Invocation): SandboxClient {
  return new SandboxClient({
    ...(inv.kubeconfig ? { kubeconfig: inv.kubeconfig } : {}),
    ...(inv.context ? { context: inv.context } : {}),
    ...(inv.namespace ? { namespace: inv.namespace } : {}),
    fastPath: {
      ...(inv.fastPathUrl ? { url: inv.fastPathUrl } : {}),
      ...(inv.fastPathCa ? { caFile: inv.fastPathCa } : {}),
      ...(inv.fastPathTokenFile ? { tokenFile: inv.fastPathTokenFile } : {}),
    },
  });
}

const call = (inv: Invocation): { timeoutMs?: number } => (inv.timeoutMs !== undefined ? { timeoutMs: inv.timeoutMs } : {});

/** What a claimed (or restored) sandbox prints; its token only with --show-token, or into --token-file. */
function printSandbox(inv: Invocation, io: Io, sb: Sandbox, verb: string): void {
  if (inv.tokenFile) writeTokenFile(inv.tokenFile, sb.token);
  const withToken = inv.showToken ? { token: sb.token } : {};
  print(inv, io, {
    object: { ...sb.toJSON(), ...withToken },
    names: [`${SANDBOX_RESOURCE}/${sb.name}`],
    status: `sandbox/${sb.name} ${verb}`,
    headers: ['NAME', 'NAMESPACE', 'NODE', 'ADDRESS'],
    rows: [[sb.name, sb.namespace, sb.node || '<pending>', sb.address || '<pending>']],
    wide: {
      headers: ['VIA', 'CLAIM', 'CLAIM-ID', 'DEADLINE'],
      rows: [[sb.via, sb.claimName ?? '<none>', sb.claimId ?? '', sb.deadline ?? '']],
    },
  });
  if (inv.output === undefined || inv.output === 'wide') {
    if (inv.showToken) io.out(`token: ${sb.token}\n`);
    if (inv.tokenFile) io.out(`token written to ${inv.tokenFile}\n`);
  }
}

function print(inv: Invocation, io: Io, p: Printable): void {
  io.out(render(p, { output: inv.output, noHeaders: inv.noHeaders }));
}

function handleOf(c: SandboxClient, inv: Invocation): Sandbox {
  return c.sandbox(inv.target, inv.namespace ?? c.namespace);
}

/** A command that acted on one sandbox: `sandbox/NAME paused`, or the result as an object. */
function done(inv: Invocation, io: Io, name: string, what: string, obj: unknown): void {
  print(inv, io, { object: obj, names: [`${SANDBOX_RESOURCE}/${name}`], status: `sandbox/${name} ${what}`, headers: [], rows: [] });
}

/** Runs the command; resolves with the exit code where the command decides it (exec passes its command's on). */
export async function run(inv: Invocation, io: Io): Promise<number | undefined> {
  const c = clientOf(inv);
  const ns = inv.namespace ?? c.namespace;
  const command = inv.command;
  if (isDataPlaneCommand(command)) return runDataPlane(c, { ...inv, command }, io);
  switch (command) {
    case 'claim': {
      const sb = await c.claim({
        pool: inv.target,
        namespace: ns,
        via: inv.fast ? 'fast' : 'claim',
        wait: inv.fast || inv.wait,
        ...(inv.name ? { name: inv.name } : {}),
        ...(inv.ttlSeconds ? { ttlSeconds: inv.ttlSeconds } : {}),
        ...(io.interrupted ? { signal: io.interrupted } : {}),
        ...call(inv),
      });
      if (!inv.fast && !inv.wait) {
        const claim = sb.claimName ?? sb.name;
        print(inv, io, {
          object: { ...sb.toJSON() },
          names: [`${CLAIM_RESOURCE}/${claim}`],
          status: `sandboxclaim/${claim} created; \`kubectl sandbox list -n ${ns}\` shows when it is Ready`,
          headers: [],
          rows: [],
        });
        return;
      }
      printSandbox(inv, io, sb, inv.fast ? 'claimed (fast path)' : 'claimed');
      return;
    }
    case 'list':
      print(inv, io, await listing(c, inv, ns));
      return;
    case 'pause':
      await handleOf(c, inv).pause(call(inv));
      done(inv, io, inv.target, 'paused', { name: inv.target, namespace: ns, paused: true });
      return;
    case 'resume':
      await handleOf(c, inv).resume(call(inv));
      done(inv, io, inv.target, 'resumed', { name: inv.target, namespace: ns, paused: false });
      return;
    case 'fork': {
      const children = await handleOf(c, inv).fork({
        ...(inv.count ? { count: inv.count } : {}),
        ...(inv.ttlSeconds ? { ttlSeconds: inv.ttlSeconds } : {}),
        ...(io.interrupted ? { signal: io.interrupted } : {}),
        ...call(inv),
      });
      print(inv, io, {
        object: { parent: inv.target, namespace: ns, children },
        names: children.map((ch) => `${SANDBOX_RESOURCE}/${ch.name}`),
        status: `sandbox/${inv.target} forked ${children.length}`,
        headers: ['NAME', 'NODE', 'ADDRESS'],
        rows: children.map((ch) => [ch.name, ch.nodeName ?? '', ch.address ?? '']),
        wide: { headers: ['SANDBOX-ID'], rows: children.map((ch) => [ch.sandboxID ?? '']) },
      });
      return;
    }
    case 'snapshot': {
      const s = await handleOf(c, inv).snapshot({ ...(inv.snapshotName ? { name: inv.snapshotName } : {}), ...call(inv) });
      print(inv, io, {
        object: s,
        names: [`snapshot/${s.snapshotID}`],
        status: `sandbox/${inv.target} snapshot ${s.snapshotID} taken${s.name ? ` (${s.name})` : ''} on ${s.nodeName ?? 'its node'}`,
        headers: [],
        rows: [],
      });
      return;
    }
    case 'snapshots': {
      const items = await handleOf(c, inv).snapshots(call(inv));
      print(inv, io, {
        object: { items },
        names: items.map((s) => `snapshot/${s.snapshotID}`),
        headers: ['SNAPSHOT', 'NAME', 'NODE', 'AGE'],
        rows: items.map((s) => [s.snapshotID, s.name ?? '', s.nodeName ?? '', age(s.creationTimestamp ?? undefined)]),
        empty: `sandbox/${inv.target} has no snapshots`,
      });
      return;
    }
    case 'restore': {
      const sb = await handleOf(c, inv).restore({
        snapshot: inv.snapshot ?? '',
        name: inv.name ?? '',
        ...(inv.ttlSeconds ? { ttlSeconds: inv.ttlSeconds } : {}),
        ...(io.interrupted ? { signal: io.interrupted } : {}),
        ...call(inv),
      });
      printSandbox(inv, io, sb, `restored from ${inv.snapshot}`);
      return;
    }
    case 'promote': {
      const r = await handleOf(c, inv).promote({ template: inv.template ?? '', ...call(inv) });
      done(inv, io, inv.target, `promoted to template ${r.template ?? inv.template} on ${r.nodeName ?? 'its node'}`, r);
      return;
    }
    case 'stats': {
      const s = await handleOf(c, inv).stats(call(inv));
      const mib = (b: number | undefined): string => (b === undefined ? '' : `${Math.round(b / 1048576)}Mi`);
      print(inv, io, {
        object: s,
        names: [`${SANDBOX_RESOURCE}/${inv.target}`],
        headers: ['NAME', 'NODE', 'CPUS', 'MEMORY USED', 'MEMORY TOTAL', 'PAUSED'],
        rows: [[inv.target, s.nodeName ?? '', String(s.cpuCount ?? ''), mib(s.memUsedBytes), mib(s.memTotalBytes), String(s.paused ?? '')]],
      });
      return;
    }
    case 'token': {
      const token = await c.token(inv.target, { namespace: ns, ...call(inv) });
      if (inv.tokenFile) {
        writeTokenFile(inv.tokenFile, token);
        io.out(`token written to ${inv.tokenFile}\n`);
      } else if (inv.output === 'json' || inv.output === 'yaml') io.out(structured(inv.output, { name: inv.target, namespace: ns, token }));
      else io.out(`${token}\n`);
      return;
    }
    case 'release': {
      if (!(await handleOf(c, inv).release(call(inv)))) {
        throw new NotFoundError(`not found: no sandboxclaim or sandbox "${inv.target}" in namespace "${ns}"`, {
          code: 404,
          reason: 'NotFound',
          target: { verb: 'delete', resource: 'sandboxclaims', namespace: ns, name: inv.target },
        });
      }
      done(inv, io, inv.target, 'released', { name: inv.target, namespace: ns, released: true });
      return;
    }
    case 'e2b-key': {
      // as e2b's SDKs read them: the key is a token of the ServiceAccount, for kube-apiserver's own audience
      const token = await c.serviceAccountToken(inv.target, {
        namespace: ns,
        ...(inv.keySeconds !== undefined ? { expirationSeconds: inv.keySeconds } : {}),
        ...call(inv),
      });
      const url = inv.e2bUrl ?? process.env.E2B_API_URL;
      io.out(`export E2B_API_KEY=${token}\n`);
      if (url) io.out(`export E2B_API_URL=${url}\nexport E2B_SANDBOX_URL=${url}\n`);
      else io.err("no --url and no $E2B_API_URL: set E2B_API_URL and E2B_SANDBOX_URL to the cluster's e2b API\n");
      return;
    }
    case 'help':
    case 'version':
    case 'completion':
      return;
  }
}
