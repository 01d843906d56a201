import { provisioningFailed } from './api-error';
import type { AuthNode } from './auth';
import { sleep, type Clock } from './clock';
import { autoRefillConcurrency, type NodeConfig, type Tenant } from './config';
import type { DataPlane } from './data-plane/data-plane';
import type { FaultState } from './faults';
import type { LatencyModel } from './latency';
import { Lineage } from './lineage';
import { NodeMetrics } from './node-metrics';
import type { PoolSettings } from './pool';
import { PoolSet, type RefillHost } from './pool-set';
import type { Rng } from './rng';
import { ARCHIVED, HIBERNATED, RUNNING, Sandbox, type VmState } from './sandbox';
import { SecretTokens } from './secret-tokens';
import type { KeyTable, SimKey } from './wire-key';

/** The node's view of its peers (gossip); absent on a single node. */
export interface MeshView {
  /** Peer client addresses, for `GET /v1/peers` and info. */
  peerAddrs(): string[];
  /** Up to 2 peers with warm VMs of the key, by power-of-two choices. */
  warmPeers(key: SimKey): string[];
  /** Peers that own a promoted template of the key. */
  templateOwners(key: SimKey): string[];
  /** Up to 3 peers holding the checkpoint (probed live). */
  checkpointOwners(id: string): Promise<string[]>;
}

export interface NodeStateOptions {
  name: string;
  config: NodeConfig;
  keys: KeyTable;
  clock: Clock;
  rng: Rng;
  latency: LatencyModel;
  faults: FaultState;
}

const PARK_MS = 30_000;

/**
 * One simulated sandboxd: its live claims, pools, lineage and counters. Times inside are
 * milliseconds relative to `epoch` (see Sandbox). Operations live in *-ops.ts; this class
 * keeps the bookkeeping that every operation shares.
 */
export class NodeState implements RefillHost, AuthNode {
  readonly name: string;
  readonly config: NodeConfig;
  readonly keys: KeyTable;
  readonly clock: Clock;
  readonly rng: Rng;
  readonly latency: LatencyModel;
  readonly faults: FaultState;
  readonly epoch: number;
  readonly sandboxes = new Map<string, Sandbox>();
  readonly pools: PoolSet;
  readonly lineage = new Lineage();
  readonly metrics = new NodeMetrics();
  readonly refillConcurrency: number;
  advertiseAddr = '';
  draining = false;
  mesh: MeshView | undefined;
  /** Real files and processes of the claimed sandboxes; undefined with --data-plane=off. */
  dataPlane: DataPlane | undefined;
  /** Provisions in flight (claims and refill), which slow each other down. */
  provisioning = 0;
  #parkedUntil = -1;
  #parkReason = '';
  readonly #tenantsByToken: Map<string, Tenant>;
  readonly #tenantClaims = new Map<string, number>();
  #hibernated = 0;
  #archived = 0;
  readonly #tokens = new SecretTokens();

  constructor(opts: NodeStateOptions) {
    this.name = opts.name;
    this.config = opts.config;
    this.keys = opts.keys;
    this.clock = opts.clock;
    this.rng = opts.rng;
    this.latency = opts.latency;
    this.faults = opts.faults;
    this.epoch = opts.clock.now();
    this.refillConcurrency = opts.config.refillConcurrency || autoRefillConcurrency();
    this.#tenantsByToken = new Map(opts.config.tenants.map((t) => [t.token, t]));
    this.pools = new PoolSet(this);
  }

  /** Node-relative milliseconds. */
  now(): number {
    return this.clock.now() - this.epoch;
  }

  wallMs(rel: number): number {
    return rel + this.epoch;
  }

  get rootToken(): string {
    return this.config.token;
  }

  get open(): boolean {
    return this.config.token === '' && this.config.tenants.length === 0;
  }

  tenantByToken(token: string): Tenant | undefined {
    return this.#tenantsByToken.get(token);
  }

  findSandbox(id: string): Sandbox | undefined {
    return this.sandboxes.get(id);
  }

  // --- the claim table -------------------------------------------------------------------

  add(sb: Sandbox): void {
    this.sandboxes.set(sb.id, sb);
    if (sb.tenant !== undefined) this.#tenantClaims.set(sb.tenant, this.tenantClaims(sb.tenant) + 1);
  }

  /** The claim ends (release, reap, archive purge, node stop): its processes and files go with it. */
  remove(sb: Sandbox): void {
    if (!this.sandboxes.delete(sb.id)) return;
    this.dataPlane?.discard(sb.id);
    this.#countState(sb.state, -1);
    if (sb.tenant !== undefined) this.#tenantClaims.set(sb.tenant, this.tenantClaims(sb.tenant) - 1);
  }

  /** Hibernate and archive stop the sandbox's processes (SIGSTOP); running again resumes them. */
  setState(sb: Sandbox, state: VmState): void {
    this.#countState(sb.state, -1);
    if (state === RUNNING) this.dataPlane?.thaw(sb.id);
    else this.dataPlane?.freeze(sb.id);
    sb.state = state;
    this.#countState(state, 1);
    if (state === HIBERNATED) sb.hibernatedAt = this.now();
  }

  #countState(state: VmState, delta: number): void {
    if (state === HIBERNATED) this.#hibernated += delta;
    else if (state === ARCHIVED) this.#archived += delta;
  }

  tenantClaims(name: string): number {
    return this.#tenantClaims.get(name) ?? 0;
  }

  get claimed(): number {
    return this.sandboxes.size;
  }

  get hibernated(): number {
    return this.#hibernated;
  }

  get archived(): number {
    return this.#archived;
  }

  /** Claims whose VM runs (hibernated and archived ones hold no running VM). */
  get running(): number {
    return this.sandboxes.size - this.#hibernated - this.#archived;
  }

  /**
   * Admission for `count` new claims of `tenant`: undefined when admitted, else the detail of
   * the daemon's `node claim quota reached: <detail>`. Root is never tenant-capped.
   */
  refusal(tenant: string | undefined, count = 1): string | undefined {
    if (this.draining) return 'node draining';
    const max = this.config.maxClaims;
    if (max > 0 && this.claimed + count > max) return `${this.claimed} live claims, cap ${max}`;
    if (tenant === undefined) return undefined;
    const cap = this.config.tenants.find((t) => t.name === tenant)?.maxClaims ?? 0;
    const live = this.tenantClaims(tenant);
    if (cap > 0 && live + count > cap) return `tenant ${tenant} at ${live} live claims, cap ${cap}`;
    return undefined;
  }

  // --- ids --------------------------------------------------------------------------------

  newSandboxId(): string {
    for (;;) {
      const id = this.rng.id('sb_');
      if (!this.sandboxes.has(id)) return id;
    }
  }

  newCheckpointId(): string {
    return this.rng.id('ck_');
  }

  /** Sandbox bearer tokens are real secrets, never from the seeded generator. */
  newToken(): string {
    return this.#tokens.next();
  }

  // --- VMs ----------------------------------------------------------------------------------

  bootable(template: string): boolean {
    return this.config.images === undefined || this.config.images.includes(template);
  }

  /** Boots one VM and resolves with how long it took; rejects with `500 provisioning failed`. */
  async provision(key: SimKey, tier: 'clone' | 'cold'): Promise<number> {
    const ms = this.latency.sample(tier, this.provisioning);
    const limit = this.latency.readyLimitMs(tier);
    const fails = this.faults.provisionFails(key) || (tier === 'cold' && !this.bootable(key.template));
    this.provisioning++;
    try {
      // A guest that is not ready within the readiness limit fails at the limit.
      await sleep(this.clock, limit > 0 ? Math.min(ms, limit) : ms);
      if (fails || (limit > 0 && ms > limit)) throw provisioningFailed();
      return ms;
    } finally {
      this.provisioning--;
    }
  }

  async buildGolden(key: SimKey): Promise<void> {
    await sleep(this.clock, this.latency.goldenBuildMs());
    if (this.faults.provisionFails(key) || !this.bootable(key.template)) throw provisioningFailed();
  }

  /** Whether one more VM fits under the node's VM capacity. */
  hasVmRoom(): boolean {
    const cap = this.config.vmCapacity;
    return cap === 0 || this.running + this.pools.warmTotal() + this.provisioning < cap;
  }

  park(reason: string): void {
    this.#parkedUntil = this.now() + PARK_MS;
    this.#parkReason = reason;
    this.later(PARK_MS, () => this.pools.refillAll());
  }

  isParked(): boolean {
    return this.now() < this.#parkedUntil;
  }

  /** Reported by info while refill is parked. */
  get atCapacityReason(): string | undefined {
    return this.isParked() ? this.#parkReason : undefined;
  }

  later(ms: number, fn: () => void): void {
    this.clock.setTimer(fn, ms);
  }

  // --- settings -------------------------------------------------------------------------------

  /** Idle/archive settings of a key: its pool's, else the node-wide ones. */
  lifecycleOf(key: SimKey): Pick<PoolSettings, 'idleHibernateS' | 'archiveAfterS' | 'archiveDeleteAfterS'> {
    const pool = this.pools.get(key);
    if (pool) return pool.settings;
    const c = this.config;
    return {
      idleHibernateS: c.idleHibernateSeconds,
      archiveAfterS: c.archiveAfterSeconds,
      archiveDeleteAfterS: c.archiveDeleteAfterSeconds,
    };
  }

  isRunning(sb: Sandbox): boolean {
    return sb.state === RUNNING;
  }
}
