import { ANNOTATIONS, CONDITION_REASONS } from '../constants';
import type { PodTemplate } from '../schemas/pod-template';
import type { SandboxClaimSpec } from '../schemas/sandbox-claim';
import type { SandboxTemplateSpec } from '../schemas/sandbox-template';

/**
 * The fields of agent-sandbox's API that a microVM sandbox cannot act on as upstream does, and
 * what this project does with each: honours it, or refuses a value that asks for behaviour it
 * does not provide. The one list the claim-controller, the warm-pool driver and sandbox-apiserver
 * read, so the same value is refused the same way (and documented once) wherever it arrives.
 * Default and empty values are never refused: they ask for nothing.
 */

export type UpstreamKind = 'SandboxClaim' | 'SandboxTemplate' | 'SandboxWarmPool' | 'Sandbox';

export interface UpstreamField {
  readonly kind: UpstreamKind;
  readonly field: string;
  readonly verdict: 'honoured' | 'refused';
  /** What is done with the field, and why. */
  readonly why: string;
}

/** Reasons of a refusal: upstream's where it has one, else InvalidSpec. */
export const REFUSAL_REASONS = {
  invalidSpec: 'InvalidSpec',
  envVarsInjectionRejected: CONDITION_REASONS.envVarsInjectionRejected,
  volumeClaimTemplatesError: CONDITION_REASONS.volumeClaimTemplatesError,
  invalidMetadata: CONDITION_REASONS.invalidMetadata,
} as const;
export type RefusalReason = (typeof REFUSAL_REASONS)[keyof typeof REFUSAL_REASONS];

/** One refused value: the field (a path in its object), the condition reason and the message users read. */
export interface RefusedField {
  readonly field: string;
  readonly reason: RefusalReason;
  readonly message: string;
}

const WHY = {
  claimEnv:
    "a claim is handed a microVM booted before it was made, and sandboxd's claim takes no environment; pass variables per command (the exec API's env) instead",
  claimEnvDisallowed: "the template's envVarsInjectionPolicy is Disallowed (its default): claims may not set environment variables",
  claimVolumes: 'a microVM sandbox mounts no PersistentVolumeClaims; it keeps its own disk, which snapshots and forks carry',
  claimVolumesDisallowed:
    "the template's volumeClaimTemplatesPolicy is Disallowed (its default): claims may not add volume claim templates",
  claimPodMetadata:
    "a claim's sandbox is a microVM, not a pod; set labels and annotations on the claim's Sandbox instead (kubectl label/annotate sandbox <claim name>)",
  networkPolicy:
    'no NetworkPolicy applies to a microVM: its network is the sandbox.cocoonstack.io/net lane (none or egress) of the template; set networkPolicyManagement: Unmanaged to leave it unset',
  service: 'no Service is created for a microVM sandbox; it is reached through its address in status (or the data-plane API)',
  templateVolumes: 'a microVM sandbox mounts no PersistentVolumeClaims; it keeps its own disk, which snapshots and forks carry',
  sandboxRetain:
    "a Sandbox's microVM and its object end together at shutdownTime (the node's lease runs out): Retain, keeping the object after expiry, is not provided; omit shutdownPolicy or set Delete",
} as const;

/** Every upstream field this project was checked against, honoured or refused (docs/upstream-clients.md renders the same). */
export const UPSTREAM_FIELDS: readonly UpstreamField[] = [
  {
    kind: 'SandboxClaim',
    field: 'spec.env',
    verdict: 'refused',
    why: `${WHY.claimEnv} (reason EnvVarsInjectionRejected when the template disallows it, else InvalidSpec)`,
  },
  {
    kind: 'SandboxClaim',
    field: 'spec.volumeClaimTemplates',
    verdict: 'refused',
    why: `${WHY.claimVolumes} (reason VolumeClaimTemplatesError when the template disallows it, else InvalidSpec)`,
  },
  {
    kind: 'SandboxClaim',
    field: 'spec.additionalPodMetadata',
    verdict: 'refused',
    why: `${WHY.claimPodMetadata} (reason InvalidMetadata)`,
  },
  {
    kind: 'SandboxTemplate',
    field: 'spec.networkPolicy',
    verdict: 'refused',
    why: `${WHY.networkPolicy}; ignored, as upstream does, under Unmanaged`,
  },
  {
    kind: 'SandboxTemplate',
    field: 'spec.networkPolicyManagement',
    verdict: 'honoured',
    why: 'Unmanaged: no NetworkPolicy is created and spec.networkPolicy is ignored, as upstream; Managed (the default) with no spec.networkPolicy leaves the sandbox on its network lane',
  },
  {
    kind: 'SandboxTemplate',
    field: 'spec.envVarsInjectionPolicy',
    verdict: 'honoured',
    why: 'Disallowed (the default) refuses a claim that sets spec.env with reason EnvVarsInjectionRejected; with Allowed or Overrides such a claim is still refused (InvalidSpec), as claim env is',
  },
  {
    kind: 'SandboxTemplate',
    field: 'spec.volumeClaimTemplatesPolicy',
    verdict: 'honoured',
    why: 'Disallowed (the default) refuses a claim that sets spec.volumeClaimTemplates with reason VolumeClaimTemplatesError; with Allowed or Overrides such a claim is still refused (InvalidSpec), as claim volumes are',
  },
  { kind: 'SandboxTemplate', field: 'spec.service', verdict: 'refused', why: `true: ${WHY.service}; false or unset is accepted` },
  { kind: 'SandboxTemplate', field: 'spec.volumeClaimTemplates', verdict: 'refused', why: `non-empty: ${WHY.templateVolumes}` },
  {
    kind: 'SandboxWarmPool',
    field: 'spec.updateStrategy',
    verdict: 'honoured',
    why: "Recreate drains the warm members of the old pool key at once when the template's pool key changes; OnReplenish (the default) keeps them serving claims until the new key is warm, then drains them",
  },
  { kind: 'Sandbox', field: 'spec.shutdownPolicy', verdict: 'refused', why: `Retain with a shutdownTime: ${WHY.sandboxRetain}` },
  { kind: 'Sandbox', field: 'spec.volumeClaimTemplates', verdict: 'refused', why: `non-empty: ${WHY.templateVolumes}` },
  { kind: 'Sandbox', field: 'spec.service', verdict: 'refused', why: `true: ${WHY.service}; false or unset is accepted` },
];

const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** A value that asks for nothing: absent, null, false, '', [] or {}. */
export function isEmptyValue(v: unknown): boolean {
  if (v === undefined || v === null || v === false || v === '') return true;
  if (Array.isArray(v)) return v.length === 0;
  return isRecord(v) && Object.keys(v).length === 0;
}

/** Template fields that ask for what a microVM does not do (paths relative to the template). */
export function refusedTemplateFields(spec: SandboxTemplateSpec): RefusedField[] {
  const out: RefusedField[] = [];
  const refuse = (field: string, message: string): void => void out.push({ field, reason: REFUSAL_REASONS.invalidSpec, message });
  // Unmanaged ignores networkPolicy entirely (upstream's definition): nothing is asked for
  if (spec.networkPolicy !== undefined && spec.networkPolicy !== null && spec.networkPolicyManagement !== 'Unmanaged')
    refuse('spec.networkPolicy', WHY.networkPolicy);
  if (spec.service === true) refuse('spec.service', WHY.service);
  if (!isEmptyValue(spec.volumeClaimTemplates)) refuse('spec.volumeClaimTemplates', WHY.templateVolumes);
  return out;
}

/** Claim fields refused against its template's policies (paths relative to the claim). */
export function refusedClaimFields(
  claim: SandboxClaimSpec,
  template: Pick<SandboxTemplateSpec, 'envVarsInjectionPolicy' | 'volumeClaimTemplatesPolicy'>,
): RefusedField[] {
  const out: RefusedField[] = [];
  if (!isEmptyValue(claim.env))
    out.push(
      template.envVarsInjectionPolicy === 'Disallowed'
        ? { field: 'spec.env', reason: REFUSAL_REASONS.envVarsInjectionRejected, message: WHY.claimEnvDisallowed }
        : { field: 'spec.env', reason: REFUSAL_REASONS.invalidSpec, message: WHY.claimEnv },
    );
  if (!isEmptyValue(claim.volumeClaimTemplates))
    out.push(
      template.volumeClaimTemplatesPolicy === 'Disallowed'
        ? { field: 'spec.volumeClaimTemplates', reason: REFUSAL_REASONS.volumeClaimTemplatesError, message: WHY.claimVolumesDisallowed }
        : { field: 'spec.volumeClaimTemplates', reason: REFUSAL_REASONS.invalidSpec, message: WHY.claimVolumes },
    );
  const md = claim.additionalPodMetadata;
  if (md !== undefined && (!isEmptyValue(md.labels) || !isEmptyValue(md.annotations)))
    out.push({ field: 'spec.additionalPodMetadata', reason: REFUSAL_REASONS.invalidMetadata, message: WHY.claimPodMetadata });
  return out;
}

/**
 * Sandbox fields refused on create, read from the request body itself: the schema defaults
 * shutdownPolicy to Retain, so only a Retain the user wrote is refused.
 */
export function refusedSandboxFields(body: unknown): RefusedField[] {
  const spec = isRecord(body) && isRecord(body['spec']) ? body['spec'] : {};
  const out: RefusedField[] = [];
  const refuse = (field: string, message: string): void => void out.push({ field, reason: REFUSAL_REASONS.invalidSpec, message });
  if (spec['shutdownPolicy'] === 'Retain' && !isEmptyValue(spec['shutdownTime'])) refuse('spec.shutdownPolicy', WHY.sandboxRetain);
  if (!isEmptyValue(spec['volumeClaimTemplates'])) refuse('spec.volumeClaimTemplates', WHY.templateVolumes);
  if (spec['service'] === true) refuse('spec.service', WHY.service);
  return out;
}

/** Fields of a first container the project reads: its name, image (template axis) and resources (size class). */
const USED_CONTAINER_FIELDS: ReadonlySet<string> = new Set(['name', 'image', 'resources']);

export interface PodTemplateUse {
  /** Path of the pod template in its object, e.g. `spec.podTemplate`. */
  readonly at: string;
  /** Whether its sandbox.cocoonstack.io/net annotation picks the network lane (templates: yes; a Sandbox: its own metadata's does). */
  readonly netAnnotationCounts: boolean;
}

/**
 * Paths of the pod template's non-empty fields a microVM does not use: everything but the first
 * container's name, image and resources (and, for templates, the net annotation). Sidecars are
 * named by index; a whole list is one path.
 */
export function ignoredPodTemplateFields(podTemplate: PodTemplate | undefined, use: PodTemplateUse): string[] {
  if (podTemplate === undefined) return [];
  const out: string[] = [];
  const md = podTemplate.metadata;
  if (!isEmptyValue(md?.labels)) out.push(`${use.at}.metadata.labels`);
  for (const k of Object.keys(md?.annotations ?? {}).sort())
    if (!(use.netAnnotationCounts && k === ANNOTATIONS.net)) out.push(`${use.at}.metadata.annotations[${k}]`);
  const spec = podTemplate.spec as Record<string, unknown>;
  for (const k of Object.keys(spec).sort()) if (k !== 'containers' && !isEmptyValue(spec[k])) out.push(`${use.at}.spec.${k}`);
  const [first, ...sidecars] = podTemplate.spec.containers;
  const c = (first ?? {}) as Record<string, unknown>;
  for (const k of Object.keys(c).sort())
    if (!USED_CONTAINER_FIELDS.has(k) && !isEmptyValue(c[k])) out.push(`${use.at}.spec.containers[0].${k}`);
  sidecars.forEach((_, i) => out.push(`${use.at}.spec.containers[${i + 1}]`));
  return out;
}

/** The one sentence users read about ignored pod template fields (a Warning header, an event). */
export function ignoredPodTemplateMessage(fields: readonly string[]): string {
  return `not applied to a microVM sandbox (only the first container's image and resources are used): ${fields.join(', ')}`;
}
