import type { CertPair } from './pki';

/**
 * A CA rotation in three steps, each held for `overlap` so every server and client has read the
 * files of the step before (the kubelet's sync, then a poll):
 *
 *   1. trusting-new: a new CA is made and trusted alongside the old (bundles hold both); the
 *      old one still signs, so every server still serves what every client trusts;
 *   2. dropping-old: the new CA signs (serving certificates are signed again); the old one is
 *      still trusted, for servers that have not read their new certificate yet;
 *   3. done: the old CA leaves the bundles.
 *
 * The state lives in the CA Secret: `tls.*` the CA that signs, `next.*` the one coming (step 1),
 * `previous.crt` the one going (step 2), and annotations for the step and when it began.
 */
export type RotationPhase = 'trusting-new' | 'dropping-old';

export interface CaState {
  /** The CA that signs now. */
  signing: CertPair;
  next?: CertPair;
  previous?: string;
  phase?: RotationPhase;
  /** When the phase began (ms). */
  sinceMs?: number;
  /** The value of the rotate request annotation last acted on. */
  handled?: string;
}

export interface RotationInputs {
  now: number;
  overlapMs: number;
  /** Rotate because the signing CA ends within this (0 = only on request). */
  renewBeforeMs: number;
  signingNotAfterMs: number;
  /** The rotate request annotation's value (a rotation starts when it differs from `handled`). */
  requested?: string | undefined;
}

/** Nothing to do, or the step to take now (trusting-new makes the new CA first). */
export type RotationStep = { kind: 'steady' } | { kind: 'advance'; to: 'trusting-new' | 'dropping-old' | 'done' };

/** What the state calls for now. */
export function rotationStep(state: CaState, i: RotationInputs): RotationStep {
  if (state.phase === undefined) {
    const requested = i.requested !== undefined && i.requested !== '' && i.requested !== state.handled;
    const due = i.renewBeforeMs > 0 && i.signingNotAfterMs - i.renewBeforeMs <= i.now;
    return requested || due ? { kind: 'advance', to: 'trusting-new' } : { kind: 'steady' };
  }
  if ((state.sinceMs ?? 0) + i.overlapMs > i.now) return { kind: 'steady' };
  return { kind: 'advance', to: state.phase === 'trusting-new' ? 'dropping-old' : 'done' };
}

/** The state after `step`, given the new CA where step 1 needs one. */
export function advance(
  state: CaState,
  to: 'trusting-new' | 'dropping-old' | 'done',
  now: number,
  made?: CertPair,
  requested?: string,
): CaState {
  switch (to) {
    case 'trusting-new': {
      if (made === undefined) throw new Error('a rotation needs the new CA');
      return {
        signing: state.signing,
        next: made,
        phase: 'trusting-new',
        sinceMs: now,
        ...(requested ? { handled: requested } : pick(state)),
      };
    }
    case 'dropping-old': {
      if (state.next === undefined) return { signing: state.signing, ...pick(state) };
      return { signing: state.next, previous: state.signing.cert, phase: 'dropping-old', sinceMs: now, ...pick(state) };
    }
    case 'done':
      return { signing: state.signing, ...pick(state) };
  }
}

const pick = (s: CaState): { handled?: string } => (s.handled !== undefined ? { handled: s.handled } : {});

/** The CAs a client must trust in this state, signing CA first. */
export function trustBundle(state: CaState): string {
  return [state.signing.cert, state.next?.cert, state.previous]
    .filter((c): c is string => c !== undefined && c !== '')
    .map((c) => (c.endsWith('\n') ? c : `${c}\n`))
    .join('');
}

/** When the state next needs a look (the end of its overlap), or undefined when steady. */
export function phaseEndsAt(state: CaState, overlapMs: number): number | undefined {
  return state.phase === undefined ? undefined : (state.sinceMs ?? 0) + overlapMs;
}
