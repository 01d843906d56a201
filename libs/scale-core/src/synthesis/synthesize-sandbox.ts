import { addressIPs } from '../address/address-ips';
import {
  ANNOTATIONS,
  CONDITION_REASONS,
  CONDITION_STATUS,
  CONDITION_TYPES,
  DEFAULT_NAMESPACE,
  SANDBOX_API_VERSION,
  SANDBOX_LABELS,
  type ConditionStatus,
} from '../constants';
import { fnv1a64 } from '../hash/fnv1a';
import { sandboxUid } from '../hash/stable-uid';
import type { InventoryEntry } from '../schemas/node-inventory';
import { normalizeTimestamp } from './rfc3339';
import { parseOwnerRef } from '../claim-ref/owner-ref';

/** The entry fields synthesis reads; a parsed InventoryEntry fits. */
export type EntryLike = Pick<InventoryEntry, 'name' | 'id' | 'phase' | 'claimRef' | 'addr' | 'deadline' | 'claimedAt'>;

/** A condition on a served Sandbox; synthesized reads have no transition time (null, as in Go). */
export interface SandboxCondition {
  readonly type: string;
  readonly status: ConditionStatus;
  readonly reason: string;
  readonly message: string;
  readonly lastTransitionTime: string | null;
}

/** A Sandbox as sandbox-apiserver serves it on reads: metadata and status, empty spec. */
export interface ServedSandbox {
  readonly apiVersion: typeof SANDBOX_API_VERSION;
  readonly kind: 'Sandbox';
  readonly metadata: {
    readonly name: string;
    readonly namespace: string;
    readonly uid: string;
    readonly resourceVersion: string;
    readonly generation: number;
    readonly creationTimestamp: string | null;
    readonly labels: Readonly<Record<string, string>>;
    /** Absent, not `{}`, when there is nothing to annotate. */
    readonly annotations?: Readonly<Record<string, string>>;
    /** Who set which user fields (server-side apply's field ownership); absent until someone does. */
    readonly managedFields?: readonly Readonly<Record<string, unknown>>[];
  };
  readonly spec: Readonly<Record<string, never>>;
  readonly status: {
    readonly nodeName: string;
    readonly podIPs?: readonly string[];
    readonly conditions: readonly SandboxCondition[];
  };
}

/** `a/b/c` -> namespace `a`, name `b/c`; no slash -> namespace `default`. */
export function splitEntryName(entryName: string): { namespace: string; name: string } {
  const slash = entryName.indexOf('/');
  if (slash < 0) return { namespace: DEFAULT_NAMESPACE, name: entryName };
  return { namespace: entryName.slice(0, slash), name: entryName.slice(slash + 1) };
}

/**
 * The owner's name in a claimRef (`<kind>:<uid>:<ns>/<name>`, or the legacy `<ns>/<name>`);
 * for any other string, what follows the first `/`, or the whole string.
 */
export function claimRefName(claimRef: string): string {
  const owner = parseOwnerRef(claimRef);
  if (owner) return owner.name;
  const slash = claimRef.indexOf('/');
  return slash < 0 ? claimRef : claimRef.slice(slash + 1);
}

/** Labels of a synthesized Sandbox. */
export function sandboxLabelsFor(node: string, entry: Pick<EntryLike, 'phase' | 'claimRef'>): Record<string, string> {
  const labels: Record<string, string> = { [SANDBOX_LABELS.node]: node };
  if (entry.phase !== '') labels[SANDBOX_LABELS.phase] = entry.phase;
  const claim = entry.claimRef ? claimRefName(entry.claimRef) : '';
  if (claim !== '') labels[SANDBOX_LABELS.claim] = claim;
  return labels;
}

/** Ready is True iff the phase is Running or Ready in any case; the reason is the phase, or Unknown. */
export function readyConditionFor(node: string, phase: string): SandboxCondition {
  const p = phase.toLowerCase();
  return {
    type: CONDITION_TYPES.ready,
    status: p === 'running' || p === 'ready' ? CONDITION_STATUS.true : CONDITION_STATUS.false,
    reason: phase === '' ? CONDITION_REASONS.unknown : phase,
    message: `sandbox phase ${JSON.stringify(phase)} reported by node ${JSON.stringify(node)}`,
    lastTransitionTime: null,
  };
}

/**
 * FNV-1a 64 of the entry's content — the reference's resourceVersion.
 * It is NOT a resourceVersion here (see synthesizeSandbox); it is a cheap way to tell whether
 * an entry changed between two inventories, so the caller knows when to bump one.
 */
export function entryFingerprint(entry: EntryLike): string {
  const { namespace, name } = splitEntryName(entry.name);
  const parts = [
    `${namespace}/${name}`,
    entry.id ?? '',
    entry.phase,
    entry.claimRef ?? '',
    entry.addr ?? '',
    normalizeTimestamp(entry.deadline),
  ];
  return fnv1a64(parts.join('|'));
}

export interface SynthesizeOptions {
  /**
   * A decimal integer that grows with every change the caller observes — e.g. the
   * NodeInventory's own resourceVersion (an etcd revision) or the caller's change counter.
   * Not a content hash: clients treat resourceVersion as a position in one ordered stream
   * (watch resume, informer relists, and integer comparison since Kubernetes 1.35). A hash
   * jumps back and forth, so a newer object can look older and be dropped, and an A->B->A
   * change repeats an old value that clients take for "unchanged".
   */
  readonly resourceVersion: string;
  /** Used when the entry carries no `claimedAt`, e.g. when the caller first saw the sandbox. */
  readonly fallbackCreationTimestamp?: string | Date;
}

function annotationsFor(entry: EntryLike): Record<string, string> | undefined {
  const out: Record<string, string> = {};
  if (entry.id) out[ANNOTATIONS.claimId] = entry.id;
  const deadline = normalizeTimestamp(entry.deadline);
  if (deadline !== '') out[ANNOTATIONS.deadline] = deadline;
  return Object.keys(out).length > 0 ? out : undefined;
}

/**
 * The Sandbox a read serves for one inventory entry on `node` (what informers and the
 * garbage collector rely on): stable uid from (node, claim id), stable creationTimestamp
 * from the node's grant time, caller-supplied increasing resourceVersion. Never a token.
 */
export function synthesizeSandbox(node: string, entry: EntryLike, opts: SynthesizeOptions): ServedSandbox {
  const { namespace, name } = splitEntryName(entry.name);
  const created = normalizeTimestamp(entry.claimedAt) || normalizeTimestamp(opts.fallbackCreationTimestamp);
  const annotations = annotationsFor(entry);
  const podIPs = addressIPs(entry.addr);
  return {
    apiVersion: SANDBOX_API_VERSION,
    kind: 'Sandbox',
    metadata: {
      name,
      namespace,
      uid: sandboxUid(node, entry.id ?? '', `${namespace}/${name}`),
      resourceVersion: opts.resourceVersion,
      generation: 1,
      creationTimestamp: created === '' ? null : created,
      labels: sandboxLabelsFor(node, entry),
      ...(annotations ? { annotations } : {}),
    },
    spec: {},
    status: {
      nodeName: node,
      ...(podIPs ? { podIPs } : {}),
      conditions: [readyConditionFor(node, entry.phase)],
    },
  };
}

/** The fields a Sandbox field selector can name; others read as ''. */
export function sandboxFieldSet(s: Pick<ServedSandbox, 'metadata' | 'status'>): Record<string, string> {
  return { 'metadata.name': s.metadata.name, 'metadata.namespace': s.metadata.namespace, 'status.nodeName': s.status.nodeName };
}

/**
 * List order: namespace, then name, by UTF-16 code units — never
 * localeCompare, whose order depends on the runtime's locale data.
 */
export function compareByNamespaceName(
  a: { metadata: { namespace?: string; name?: string } },
  b: { metadata: { namespace?: string; name?: string } },
): number {
  const an = a.metadata.namespace ?? '';
  const bn = b.metadata.namespace ?? '';
  if (an !== bn) return an < bn ? -1 : 1;
  const am = a.metadata.name ?? '';
  const bm = b.metadata.name ?? '';
  return am < bm ? -1 : am > bm ? 1 : 0;
}

/** The field names sandbox-apiserver accepts in a fieldSelector. */
export const SANDBOX_SELECTABLE_FIELDS: readonly string[] = ['metadata.name', 'metadata.namespace', 'status.nodeName'];
