import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import type { KubeConfig } from '@kubernetes/client-node';
import { isAlreadyExists, isConflict } from '../client/api-errors';
import type { Logger } from '../log/logger';
import { sleep as realSleep, type Sleep } from '@sandbox-scale/scale-core';
import { type Now, LOOP_WAIT, jitter, systemNow } from '../time';
import { type LeaseRecord, isHeldByOther, leaseBody, nextRecord, recordOf, releasedRecord, sameRecord } from './lease';
import { KubeLeaseClient, type LeaseClient } from './lease-client';

export interface LeaderElectionTimings {
  /** How long a standby waits after the last observed renewal before taking over; default 15 s. */
  leaseDurationMs?: number;
  /** How long the leader keeps retrying a failed renewal before it gives up leading; default 10 s. */
  renewDeadlineMs?: number;
  /** Pause between tries; default 2 s. */
  retryPeriodMs?: number;
}

export interface LeaderElectorOptions extends LeaderElectionTimings {
  namespace: string;
  /** The Lease name, one per component (`sandbox-scale-warmpool-driver`). */
  name: string;
  log: Logger;
  identity?: string;
  /** Called once leadership is won; the signal aborts when it is lost or given up. */
  onStartedLeading: (signal: AbortSignal) => void;
  onStoppedLeading?: () => void;
  onNewLeader?: (identity: string) => void;
  now?: Now;
  sleep?: Sleep;
}

/**
 * `<pod>_<random>`: the pod name from $POD_NAME (the chart sets it from the downward API) so
 * `kubectl get lease` names the leading pod, else the host name; the suffix keeps two processes
 * of one pod apart.
 */
export function defaultIdentity(env: Record<string, string | undefined> = process.env): string {
  return `${env.POD_NAME || hostname()}_${randomUUID().slice(0, 8)}`;
}

/**
 * client-go's leader election on a Lease: acquire (retrying every retryPeriod), renew every
 * retryPeriod, give up after renewDeadline without a successful renewal, and release on stop
 * so a standby need not wait out the lease. Every write carries the resourceVersion last read:
 * two candidates racing for the same record cannot both win.
 */
export class LeaderElector {
  readonly identity: string;
  private readonly client: LeaseClient;
  private readonly now: Now;
  private readonly sleep: Sleep;
  private readonly leaseSeconds: number;
  private readonly renewDeadlineMs: number;
  private readonly retryPeriodMs: number;
  private readonly log: Logger;
  private observed: LeaseRecord | undefined;
  private observedRv: string | undefined;
  private observedAt = 0;
  private leading = false;

  constructor(
    private readonly opts: LeaderElectorOptions,
    client: LeaseClient,
  ) {
    this.identity = opts.identity ?? defaultIdentity();
    this.client = client;
    this.now = opts.now ?? systemNow;
    this.sleep = opts.sleep ?? realSleep;
    this.leaseSeconds = Math.max(1, Math.ceil((opts.leaseDurationMs ?? 15_000) / 1000));
    this.renewDeadlineMs = opts.renewDeadlineMs ?? 10_000;
    this.retryPeriodMs = opts.retryPeriodMs ?? 2000;
    this.log = opts.log.child({ lease: `${opts.namespace}/${opts.name}`, identity: this.identity });
  }

  isLeader(): boolean {
    return this.leading;
  }

  /** Campaigns, leads, and returns when leadership is lost or the signal aborts (releasing the lease). */
  async run(signal: AbortSignal): Promise<'lost' | 'stopped'> {
    while (!signal.aborted && !(await this.tryAcquireOrRenew(signal))) {
      await this.sleep(this.untilNextTry(), signal, LOOP_WAIT);
    }
    if (signal.aborted) return 'stopped';
    this.leading = true;
    this.log.info('became leader');
    const leadership = new AbortController();
    this.opts.onStartedLeading(leadership.signal);
    const outcome = await this.renewLoop(signal);
    this.leading = false;
    leadership.abort();
    if (outcome === 'stopped') await this.release();
    else this.log.error({ renewDeadlineMs: this.renewDeadlineMs }, 'leadership lost: lease not renewed in time');
    this.opts.onStoppedLeading?.();
    return outcome;
  }

  /**
   * A retry period (jittered), or less when the lease seen held by another runs out sooner: a
   * standby then tries at the moment it may take over, so a leader that vanished is replaced one
   * lease duration after the last renewal seen rather than up to a retry period later. The try
   * reads the lease first, so a renewal that landed meanwhile still wins.
   */
  private untilNextTry(): number {
    const retry = jitter(this.retryPeriodMs, 0.2);
    const rec = this.observed;
    if (!rec || rec.holderIdentity === '' || rec.holderIdentity === this.identity) return retry;
    const expiresIn = this.observedAt + rec.leaseDurationSeconds * 1000 - this.now();
    // an expired lease that could not be taken (a lost race, a failed write) waits a retry period
    return expiresIn > 0 && expiresIn < retry ? expiresIn : retry;
  }

  private async renewLoop(signal: AbortSignal): Promise<'lost' | 'stopped'> {
    while (!signal.aborted) {
      await this.sleep(this.retryPeriodMs, signal, LOOP_WAIT);
      if (signal.aborted) break;
      const deadline = this.now() + this.renewDeadlineMs;
      let renewed = false;
      while (!signal.aborted && !renewed && this.now() < deadline) {
        renewed = await this.withDeadline(deadline, signal);
        if (!renewed && !signal.aborted)
          await this.sleep(Math.min(this.retryPeriodMs, Math.max(0, deadline - this.now())), signal, LOOP_WAIT);
      }
      if (!renewed && !signal.aborted) return 'lost';
    }
    return 'stopped';
  }

  /** One try that cannot outlive the renew deadline: a hung API call counts as a failure. */
  private async withDeadline(deadline: number, signal: AbortSignal): Promise<boolean> {
    const ac = new AbortController();
    const onAbort = (): void => ac.abort();
    signal.addEventListener('abort', onAbort, { once: true });
    const timeout = this.sleep(Math.max(0, deadline - this.now()), ac.signal, LOOP_WAIT).then(() => false);
    try {
      return await Promise.race([this.tryAcquireOrRenew(ac.signal), timeout]);
    } finally {
      signal.removeEventListener('abort', onAbort);
      ac.abort();
    }
  }

  private async tryAcquireOrRenew(signal: AbortSignal): Promise<boolean> {
    const now = this.now();
    try {
      const lease = await this.client.get(signal);
      if (!lease) {
        const rec = nextRecord(undefined, this.identity, this.leaseSeconds, now);
        const created = await this.client.create(leaseBody(this.opts.name, this.opts.namespace, rec), signal);
        this.observe(rec, created.metadata.resourceVersion, now);
        return true;
      }
      const rec = recordOf(lease);
      if (!sameRecord(this.observed, rec)) {
        this.observe(rec, lease.metadata.resourceVersion, now);
        if (rec.holderIdentity) this.opts.onNewLeader?.(rec.holderIdentity);
      }
      this.observedRv = lease.metadata.resourceVersion;
      if (isHeldByOther(rec, this.identity, this.observedAt, now)) return false;
      const next = nextRecord(rec, this.identity, this.leaseSeconds, now);
      const updated = await this.client.replace(
        leaseBody(this.opts.name, this.opts.namespace, next, lease.metadata.resourceVersion),
        signal,
      );
      this.observe(next, updated.metadata.resourceVersion, now);
      return true;
    } catch (err) {
      if (signal.aborted) return false;
      if (isConflict(err) || isAlreadyExists(err)) this.log.debug({ err }, 'lost a race for the lease');
      else this.log.warn({ err }, 'lease read/write failed');
      return false;
    }
  }

  private observe(rec: LeaseRecord, rv: string | undefined, at: number): void {
    this.observed = rec;
    this.observedRv = rv;
    this.observedAt = at;
  }

  private async release(): Promise<void> {
    if (!this.observed || this.observed.holderIdentity !== this.identity) return;
    try {
      const rec = releasedRecord(this.observed, this.now());
      try {
        await this.client.replace(leaseBody(this.opts.name, this.opts.namespace, rec, this.observedRv));
      } catch (err) {
        // a renewal cut short by the stop may have landed after all, moving the version on:
        // read it once and release against that, if the lease is still ours
        if (!isConflict(err)) throw err;
        const lease = await this.client.get();
        if (!lease || recordOf(lease).holderIdentity !== this.identity) return;
        await this.client.replace(leaseBody(this.opts.name, this.opts.namespace, rec, lease.metadata.resourceVersion));
      }
      this.observe(rec, undefined, this.now());
      this.log.info('released the lease');
    } catch (err) {
      // Not fatal: a standby takes over once the lease expires.
      this.log.warn({ err }, 'could not release the lease');
    }
  }
}

/** An elector on the Lease namespace/name of the cluster kc points at. */
export function createLeaderElector(kc: KubeConfig, opts: LeaderElectorOptions): LeaderElector {
  return new LeaderElector(opts, new KubeLeaseClient(kc, opts.namespace, opts.name));
}
