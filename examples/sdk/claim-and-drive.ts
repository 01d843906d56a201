// Claims a sandbox with @sandbox-scale/sdk, drives it, and gives it back.
// kubectl apply -f examples reads only the YAML files at the top of examples/, not this folder.
//
//   npx tsx examples/sdk/claim-and-drive.ts [POOL] [fast|claim]
//
// It uses your kubeconfig and context (KUBECONFIG, --context via SANDBOX_CONTEXT) like kubectl.
// The fast path is found from the chart's claim-controller Service, or set
// SANDBOX_SCALE_FAST_PATH_URL (and SANDBOX_SCALE_FAST_PATH_CA_FILE for a private CA).
import { isClaimTimeout, isForbidden, isUnavailable, SandboxClient } from '@sandbox-scale/sdk';

async function main(): Promise<void> {
  const pool = process.argv[2] ?? 'python-agent';
  const via = process.argv[3] === 'fast' ? 'fast' : 'claim';
  const client = new SandboxClient({ ...(process.env.SANDBOX_CONTEXT ? { context: process.env.SANDBOX_CONTEXT } : {}) });
  // Ctrl-C cancels whatever is in flight; the claim gives up after 60 s
  const stop = new AbortController();
  process.once('SIGINT', () => stop.abort());

  const sb = await client.claim({ pool, via, signal: stop.signal, timeoutMs: 60_000 });
  try {
    console.log(`claimed ${sb.namespace}/${sb.name} on ${sb.node} at ${sb.address} via ${via} (token: ${sb.token.length} characters)`);
    await sb.pause();
    console.log(`paused: ${(await sb.stats()).paused}`);
    await sb.resume();
    const stats = await sb.stats();
    console.log(`resumed: paused=${stats.paused}, ${stats.cpuCount} CPUs, ${Math.round((stats.memTotalBytes ?? 0) / 1048576)} MiB`);
    const snap = await sb.snapshot({ name: 'before-work' });
    console.log(`snapshot ${snap.snapshotID} taken`);
    const children = await sb.fork({ count: 2 });
    console.log(`forked: ${children.map((c) => c.name).join(', ')}`);
    for (const c of children) await client.sandbox(c.name, sb.namespace).release();
  } finally {
    await sb.release();
    console.log(`released ${sb.namespace}/${sb.name}`);
  }
}

main().catch((err: unknown) => {
  // typed errors: decide by kind, never by message
  if (isForbidden(err)) console.error(`not allowed: ${(err as Error).message}`);
  else if (isClaimTimeout(err))
    console.error(`no sandbox in time${isUnavailable(err) ? ' (no warm capacity)' : ''}: ${(err as Error).message}`);
  else console.error(err instanceof Error ? err.message : err);
  process.exitCode = 1;
});
