import { SandboxClient } from '../client';
import { NotFoundError } from '../errors';
import { boundSandboxOf, claimPhase, conditionOf } from '../claim-status';
import type { Sandbox } from '../sandbox';
import { writeTokenFile } from './token-file';
import type { Invocation } from './args';
import { isDataPlaneCommand, runDataPlane, type DataPlaneIo } from './data-plane-commands';
import { age, structured, table } from './output';

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

/** Prints a claimed (or restored) sandbox; its token only with --show-token, or into --token-file. */
function printSandbox(inv: Invocation, io: Io, sb: Sandbox, verb: string): void {
  if (inv.tokenFile) writeTokenFile(inv.tokenFile, sb.token);
  const withToken = inv.showToken ? { token: sb.token } : {};
  if (inv.output) {
    io.out(structured(inv.output, { ...sb.toJSON(), ...withToken }));
    return;
  }
  io.out(`sandbox/${sb.name} ${verb}\n`);
  io.out(table(['NAME', 'NAMESPACE', 'NODE', 'ADDRESS'], [[sb.name, sb.namespace, sb.node || '<pending>', sb.address || '<pending>']]));
  if (inv.showToken) io.out(`token: ${sb.token}\n`);
  if (inv.tokenFile) io.out(`token written to ${inv.tokenFile}\n`);
}

function handleOf(c: SandboxClient, inv: Invocation): Sandbox {
  return c.sandbox(inv.target, inv.namespace ?? c.namespace);
}

function done(inv: Invocation, io: Io, name: string, what: string, obj: unknown): void {
  if (inv.output) io.out(structured(inv.output, obj));
  else io.out(`sandbox/${name} ${what}\n`);
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
        if (inv.output) io.out(structured(inv.output, { ...sb.toJSON() }));
        else io.out(`sandboxclaim/${sb.claimName ?? sb.name} created; \`kubectl sandbox list -n ${ns}\` shows when it is Ready\n`);
        return;
      }
      printSandbox(inv, io, sb, inv.fast ? 'claimed (fast path)' : 'claimed');
      return;
    }
    case 'list': {
      const claims = await c.listClaims({ namespace: ns, allNamespaces: inv.allNamespaces, ...call(inv) });
      if (inv.output) {
        io.out(structured(inv.output, { apiVersion: 'v1', kind: 'List', items: claims }));
        return;
      }
      const rows = claims.map((cl) => {
        const b = boundSandboxOf(cl);
        const p = claimPhase(cl);
        const ready = conditionOf(cl, 'Ready') ?? conditionOf(cl, 'Bound');
        const cells = [
          cl.metadata.name,
          cl.spec?.warmPoolRef?.name ?? '',
          p.state === 'ready' ? 'True' : (ready?.status ?? 'Unknown'),
          p.state === 'ready' ? '' : p.reason,
          b?.name ?? '',
          b?.node ?? '',
          age(cl.metadata.creationTimestamp),
        ];
        return inv.allNamespaces ? [cl.metadata.namespace ?? '', ...cells] : cells;
      });
      if (rows.length === 0) {
        io.out(inv.allNamespaces ? 'No sandbox claims found.\n' : `No sandbox claims found in ${ns} namespace.\n`);
        return;
      }
      const headers = ['NAME', 'POOL', 'READY', 'REASON', 'SANDBOX', 'NODE', 'AGE'];
      io.out(table(inv.allNamespaces ? ['NAMESPACE', ...headers] : headers, rows));
      return;
    }
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
      if (inv.output) io.out(structured(inv.output, { parent: inv.target, namespace: ns, children }));
      else
        io.out(
          `sandbox/${inv.target} forked ${children.length}\n` +
            table(
              ['NAME', 'NODE', 'ADDRESS'],
              children.map((ch) => [ch.name, ch.nodeName ?? '', ch.address ?? '']),
            ),
        );
      return;
    }
    case 'snapshot': {
      const s = await handleOf(c, inv).snapshot({ ...(inv.snapshotName ? { name: inv.snapshotName } : {}), ...call(inv) });
      if (inv.output) io.out(structured(inv.output, s));
      else io.out(`sandbox/${inv.target} snapshot ${s.snapshotID} taken${s.name ? ` (${s.name})` : ''} on ${s.nodeName ?? 'its node'}\n`);
      return;
    }
    case 'snapshots': {
      const items = await handleOf(c, inv).snapshots(call(inv));
      if (inv.output) io.out(structured(inv.output, { items }));
      else if (items.length === 0) io.out(`sandbox/${inv.target} has no snapshots\n`);
      else
        io.out(
          table(
            ['SNAPSHOT', 'NAME', 'NODE', 'AGE'],
            items.map((s) => [s.snapshotID, s.name ?? '', s.nodeName ?? '', age(s.creationTimestamp ?? undefined)]),
          ),
        );
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
      if (inv.output) io.out(structured(inv.output, s));
      else {
        const mib = (b: number | undefined): string => (b === undefined ? '' : `${Math.round(b / 1048576)}Mi`);
        io.out(
          table(
            ['NAME', 'NODE', 'CPUS', 'MEMORY USED', 'MEMORY TOTAL', 'PAUSED'],
            [[inv.target, s.nodeName ?? '', String(s.cpuCount ?? ''), mib(s.memUsedBytes), mib(s.memTotalBytes), String(s.paused ?? '')]],
          ),
        );
      }
      return;
    }
    case 'token': {
      const token = await c.token(inv.target, { namespace: ns, ...call(inv) });
      if (inv.tokenFile) {
        writeTokenFile(inv.tokenFile, token);
        io.out(`token written to ${inv.tokenFile}\n`);
      } else if (inv.output) io.out(structured(inv.output, { name: inv.target, namespace: ns, token }));
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
    case 'help':
      return;
  }
}
