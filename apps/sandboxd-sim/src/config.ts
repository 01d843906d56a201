import { readFileSync } from 'node:fs';
import { cpus } from 'node:os';
import { z } from 'zod';
import { booleanFlag, jsonFlag } from '@sandbox-scale/kube-runtime';
import { GuestUidRangeSchema } from './data-plane/guest-ids';
import { FaultsSchema } from './faults';
import { LatencyProfileSchema } from './latency';

const count = z.number().int().min(0);

export const TenantSchema = z.object({
  name: z.string().min(1),
  token: z.string().min(1),
  /** 0 = unlimited. */
  maxClaims: count.default(0),
});
export type Tenant = z.infer<typeof TenantSchema>;

/** A pool as the node's config file (or `--pools`) declares it; same fields as PUT /v1/pools. */
export const SimPoolSchema = z.object({
  template: z.string().min(1),
  net: z.string().optional(),
  size: z.string().optional(),
  warm: count.default(0),
  warmMax: count.default(0),
  idleHibernateSeconds: count.default(0),
  archiveAfterSeconds: count.default(0),
  archiveDeleteAfterSeconds: count.default(0),
});
export type SimPool = z.infer<typeof SimPoolSchema>;

/** One simulated node's configuration (the daemon's config file). */
export const NodeConfigSchema = z.object({
  /** The node's api_token (root). Empty with no tenants = an open node. */
  token: z.string().default(''),
  tenants: z.array(TenantSchema).default([]),
  maxClaims: count.default(0),
  maxForkCount: z.number().int().min(1).default(16),
  /** 0 = auto: CPUs × 2/3 clamped to [4, 256]. */
  refillConcurrency: count.default(0),
  /** Whether the node has an egress attachment (claims of net "egress" are 409 without). */
  egress: z.boolean().default(false),
  idleHibernateSeconds: count.default(0),
  archiveAfterSeconds: count.default(0),
  archiveDeleteAfterSeconds: count.default(0),
  checkpointTtlHours: count.default(0),
  /** Lease granted to a claim, fork or renew that asks for none (ttl 0); 0 = sandboxd's 300 s. */
  defaultTtlSeconds: count.default(0),
  /** Accepted for fidelity; teardown is instant in the simulator, as the API sees it. */
  releaseDelaySeconds: count.default(0),
  pools: z.array(SimPoolSchema).default([]),
  /** Most VMs the node can run at once (warm + running claims + provisions); 0 = unlimited. */
  vmCapacity: count.default(0),
  /** Bootable template images; absent = every image boots. Others fail after the cold-boot delay. */
  images: z.array(z.string()).optional(),
  /** Extra peers (`host:port` or URLs) outside this process. */
  peers: z.array(z.string()).default([]),
});
export type NodeConfig = z.infer<typeof NodeConfigSchema>;
export type NodeConfigInput = z.input<typeof NodeConfigSchema>;

export const SimOptionsSchema = NodeConfigSchema.extend({
  nodes: z.number().int().min(1).max(400).default(1),
  host: z.string().default('127.0.0.1'),
  /** Node i listens on basePort + i; 0 = ephemeral ports (reported). */
  basePort: z.number().int().min(0).max(65535).default(0),
  namePrefix: z.string().min(1).default('node-'),
  /**
   * With a key, each node's root token is nodeToken(key, its name), as a node provisioned for
   * per-node tokens has (wins over `token`); '' = every node has `token`.
   */
  nodeTokenKey: z.string().default(''),
  /** Multiplies every simulated latency; 0 = instant. */
  speed: z.number().min(0).default(1),
  seed: z.number().int().default(1),
  profile: z.enum(['bare', 'nested']).default('bare'),
  latency: LatencyProfileSchema.default(LatencyProfileSchema.parse({})),
  /** Every node of the process is a peer of every other (a mesh). */
  mesh: z.boolean().default(true),
  faults: FaultsSchema.optional(),
  /** Daemon cadences (not scaled by speed): refill, reaper and gossip ticks. */
  refillTickMs: z.number().int().positive().default(2000),
  reapTickMs: z.number().int().positive().default(5000),
  gossipTickMs: z.number().int().positive().default(1000),
  /**
   * Real files and processes for each claimed sandbox (exec, agent, port relays) under `dataDir`.
   * Off by default: commands run on the simulator's host, isolated by path only.
   */
  dataPlane: z.boolean().default(false),
  /** Where sandbox roots live (a directory per node); '' = a fresh directory under the OS temp dir, removed on stop. */
  dataDir: z.string().default(''),
  /**
   * Each sandbox's commands run as a uid of its own from this range, and its files belong to it,
   * so a guest reads none of the simulator's files (a root token file included), writes nowhere but
   * its root, and reaches no other sandbox. Needs the simulator to run as root; absent = commands
   * run as the simulator's user.
   */
  guestUids: z.object({ first: z.number().int(), count: z.number().int().positive() }).optional(),
  /**
   * Directories guests could otherwise write to (a container's /dev/shm), made writable by their
   * owner only at start; only with `guestUids`.
   */
  closedDirs: z.array(z.string().min(1)).default([]),
});
export type SimOptions = z.infer<typeof SimOptionsSchema>;
export type SimOptionsInput = z.input<typeof SimOptionsSchema>;

export function autoRefillConcurrency(): number {
  return Math.min(256, Math.max(4, Math.floor((cpus().length * 2) / 3)));
}

const listFlag = z.string().transform((s) =>
  s
    .split(',')
    .map((x) => x.trim())
    .filter((x) => x !== ''),
);

/** Flags of sandboxd-sim (env fallback SANDBOX_SCALE_<FLAG>). */
export const SandboxdSimFlagsSchema = z.object({
  nodes: z.coerce.number().int().min(1).max(400).default(1).describe('Simulated nodes in this process (1..400)'),
  basePort: z.coerce
    .number()
    .int()
    .min(0)
    .max(65535)
    .default(7777)
    .describe('Port of the first node; node i listens on base+i; 0 = ephemeral ports'),
  host: z.string().default('127.0.0.1').describe('Address to listen on'),
  speed: z.coerce.number().min(0).default(1).describe('Latency multiplier; 0 = instant'),
  seed: z.coerce.number().int().default(1).describe('Seed of the simulated randomness'),
  token: z.string().default('').describe('Root api_token of every node (empty with no tenants = open node)'),
  tokenFile: z.string().default('').describe('File holding the root api_token of every node (wins over --token)'),
  nodeTokenKey: z
    .string()
    .default('')
    .describe(
      "Give each node its own root api_token, derived from this key (the control plane's fleet token) and the node's name, as the control plane's --sandboxd-tokens=per-node expects; wins over --token",
    ),
  tenants: jsonFlag(z.array(TenantSchema)).optional().describe('JSON [{"name","token","maxClaims"}]'),
  maxClaims: z.coerce.number().int().min(0).default(0).describe('Live claims per node; 0 = unlimited'),
  maxForkCount: z.coerce.number().int().min(1).default(16).describe('Largest fork count'),
  refillConcurrency: z.coerce.number().int().min(0).default(0).describe('Concurrent refill clones per pool; 0 = auto'),
  egress: booleanFlag(false).describe('Nodes have an egress attachment'),
  idleHibernateSeconds: z.coerce.number().int().min(0).default(0).describe('Node-wide idle hibernate for unpooled keys; 0 = off'),
  archiveAfterSeconds: z.coerce.number().int().min(0).default(0).describe('Archive after this long hibernated; 0 = off'),
  archiveDeleteAfterSeconds: z.coerce.number().int().min(0).default(0).describe('Purge archives after this long; 0 = keep'),
  checkpointTtlHours: z.coerce.number().int().min(0).default(0).describe('Checkpoint record lifetime; 0 = keep'),
  defaultTtlSeconds: z.coerce.number().int().min(0).default(0).describe('Lease granted when a claim or renew asks for none; 0 = 300 s'),
  releaseDelaySeconds: z.coerce.number().int().min(0).default(0).describe('Delay of VM teardown after release'),
  pools: jsonFlag(z.array(SimPoolSchema)).optional().describe('Initial pools, JSON [{"template","net","size","warm",...}]'),
  vmCapacity: z.coerce.number().int().min(0).default(0).describe('VMs a node can run; 0 = unlimited'),
  images: listFlag.optional().describe('Comma-separated bootable images; absent = all'),
  peers: listFlag.optional().describe('Comma-separated peers outside this process'),
  mesh: booleanFlag(true).describe('Nodes of this process are peers of each other'),
  profile: z.enum(['bare', 'nested']).default('bare').describe('Latency profile'),
  latency: jsonFlag(LatencyProfileSchema).optional().describe('Latency overrides, JSON (see latency.ts)'),
  faults: jsonFlag(FaultsSchema).optional().describe('Initial faults of every node, JSON (see faults.ts)'),
  namePrefix: z.string().min(1).default('node-').describe('Node names are <prefix><index>'),
  dataPlane: z
    .enum(['on', 'off'])
    .default('off')
    .describe(
      "on: each claimed sandbox gets a root directory under --data-dir, exec and the agent run real processes and files there, guest port 8888 is a built-in runtime (agent-sandbox's), 49983 a built-in envd (e2b's) and other guest ports relay to the simulator's host. This isolates paths (and users with --guest-uids), not the host: keep it off on shared hosts. off: the data-plane endpoints answer 501",
    ),
  dataDir: z
    .string()
    .default('')
    .describe(
      'Directory for the sandbox roots (a subdirectory per node, cleared at start); empty = a fresh directory under the OS temp dir',
    ),
  guestUids: z
    .string()
    .default('')
    .pipe(z.union([z.literal(''), GuestUidRangeSchema]))
    .describe(
      "<first>-<last>: each sandbox's commands run as a uid of its own from this range (gid the same, no supplementary groups), and the files written for it belong to it, so a guest cannot read the simulator's files (its root token file included), write outside its root, or reach another sandbox's files or listeners. Needs the simulator to run as root. Empty = commands run as the simulator's user",
    ),
  guestClosedDirs: listFlag
    .optional()
    .describe(
      "Comma-separated directories guests could write to otherwise (a container's /dev/shm), made writable by their owner only at start; only with --guest-uids",
    ),
  logLevel: z.string().default('info').describe('Log level'),
});
export type SandboxdSimFlags = z.infer<typeof SandboxdSimFlagsSchema>;

export function simOptionsFromFlags(f: SandboxdSimFlags): SimOptionsInput {
  const {
    logLevel: _logLevel,
    tokenFile,
    tenants,
    pools,
    images,
    peers,
    latency,
    faults,
    dataPlane,
    guestUids,
    guestClosedDirs,
    ...rest
  } = f;
  return {
    ...rest,
    ...(guestUids !== '' ? { guestUids } : {}),
    closedDirs: guestClosedDirs ?? [],
    dataPlane: dataPlane === 'on',
    ...(tokenFile !== '' ? { token: readFileSync(tokenFile, 'utf8').trim() } : {}),
    tenants: tenants ?? [],
    pools: pools ?? [],
    peers: peers ?? [],
    ...(images ? { images } : {}),
    ...(latency ? { latency } : {}),
    ...(faults ? { faults } : {}),
  };
}
