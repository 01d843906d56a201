import { counter, histogram } from '@sandbox-scale/kube-runtime';
import type { Registry } from 'prom-client';
import type { ClaimHow } from './gateway/claim-gateway';

/** The controller's own metrics: sandbox_scale_claim_controller_<what>_<unit>, bounded labels only. */
export function claimControllerMetrics(registry: Registry) {
  // path: fast (POST /v1/claims) or claim (a SandboxClaim); start: warm (a pre-booted VM) or cold (booted for the claim)
  const claims = counter(
    registry,
    'sandbox_scale_claim_controller_claims_total',
    'Node claims, by outcome, path (fast, claim) and start (warm, cold).',
    ['outcome', 'path', 'start'],
  );
  // cold boots take seconds (the daemon allows 90 s), warm claims milliseconds
  const claimSeconds = histogram(
    registry,
    'sandbox_scale_claim_controller_claim_duration_seconds',
    'Time to a node delivery (node choice, claim, redirects), by outcome, path and start.',
    ['outcome', 'path', 'start'],
    [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1, 2.5, 5, 10, 30, 60, 120],
  );
  const records = counter(
    registry,
    'sandbox_scale_claim_controller_records_total',
    'Async Bound records of fast-path deliveries, by outcome (recorded, failed, refused: the name belongs to another object, deferred: left to the orphan pass).',
    ['outcome'],
  );
  const orphans = counter(
    registry,
    'sandbox_scale_claim_controller_orphan_items_total',
    'Deliveries seen by the orphan pass, by outcome (adopted, created: a fast-path claim written, bound, released: a second delivery of a claim that holds another, missing, foreign: another owner, unproven: a claim reference this control plane did not write, not_enabled: claim Secrets may not be written in its namespace, error).',
    ['outcome'],
  );
  const refused = counter(
    registry,
    'sandbox_scale_claim_controller_redirects_refused_total',
    'Addresses a node named (redirect targets, recorded owner addresses) not followed, by reason (unknown: no NodeInventory advertises it, stale: only a Stale one, ambiguous: more than one does).',
    ['reason'],
  );
  const renewals = counter(
    registry,
    'sandbox_scale_claim_controller_lease_renewals_total',
    'Node lease renewals of Bound claims, by outcome (renewed, lost, deferred, error).',
    ['outcome'],
  );
  const fastPath = counter(
    registry,
    'sandbox_scale_claim_controller_fast_path_requests_total',
    'Fast-path requests, by HTTP status code.',
    ['code'],
  );
  const peerCalls = counter(
    registry,
    'sandbox_scale_claim_controller_fast_path_peer_calls_total',
    'Calls to the other fast-path replicas, by op (claim: handed to the replica serving its namespace, reserve and unreserve: a name and a place under the cap taken there while the replicas change) and outcome (ok, refused, unreachable).',
    ['op', 'outcome'],
  );
  return {
    onFastPathPeerCall: (op: string, outcome: string): void => peerCalls.inc({ op, outcome }),
    onClaim: (outcome: string, seconds: number, how: ClaimHow): void => {
      claims.inc({ outcome, ...how });
      claimSeconds.observe({ outcome, ...how }, seconds);
    },
    onRecord: (outcome: string): void => records.inc({ outcome }),
    onOrphan: (outcome: string): void => orphans.inc({ outcome }),
    onAddressRefused: (reason: string): void => refused.inc({ reason }),
    onRenewal: (outcome: 'renewed' | 'lost' | 'deferred' | 'error'): void => renewals.inc({ outcome }),
    onFastPath: (code: number): void => fastPath.inc({ code: String(code) }),
  };
}
