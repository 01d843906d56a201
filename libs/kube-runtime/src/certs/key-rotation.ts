/**
 * A claim-reference key rotation in three steps, like the CA's, so no replica ever meets a
 * reference it cannot prove:
 *
 *   1. adding: a new key joins the ring last; it verifies but does not sign, and is held
 *      `overlap` so every replica has read it (the kubelet's sync, then a poll);
 *   2. signing: the new key moves first and signs; the old keys still verify the references
 *      already on nodes, for `grace`;
 *   3. done: only the new key is left, and references made with the old ones prove nothing.
 *
 * The ring lives in the Secret's `key` (one base64 key per line, the first signs); the step and
 * when it began are annotations.
 */
export type KeyRotationPhase = 'adding' | 'signing';

export interface KeyringState {
  /** base64 keys, the signing one first. */
  keys: readonly string[];
  phase?: KeyRotationPhase;
  /** When the phase began (ms). */
  sinceMs?: number;
  /** The value of the rotate request annotation last acted on. */
  handled?: string;
}

export interface KeyRotationInputs {
  now: number;
  /** How long step 1 is held: long enough for every replica to read a changed Secret. */
  overlapMs: number;
  /** How long the old keys still verify once the new one signs (never less than `overlapMs`). */
  graceMs: number;
  /** The rotate request annotation's value (a rotation starts when it differs from `handled`). */
  requested?: string | undefined;
}

export type KeyRotationTarget = 'adding' | 'signing' | 'done';
export type KeyRotationStep = { kind: 'steady' } | { kind: 'advance'; to: KeyRotationTarget };

const holdOf = (phase: KeyRotationPhase, i: Pick<KeyRotationInputs, 'overlapMs' | 'graceMs'>): number =>
  phase === 'adding' ? i.overlapMs : Math.max(i.overlapMs, i.graceMs);

/** What the ring calls for now. */
export function keyRotationStep(state: KeyringState, i: KeyRotationInputs): KeyRotationStep {
  if (state.phase === undefined) {
    const requested = i.requested !== undefined && i.requested !== '' && i.requested !== state.handled;
    return requested ? { kind: 'advance', to: 'adding' } : { kind: 'steady' };
  }
  if ((state.sinceMs ?? 0) + holdOf(state.phase, i) > i.now) return { kind: 'steady' };
  return { kind: 'advance', to: state.phase === 'adding' ? 'signing' : 'done' };
}

/** The ring after `to`, given the new key where step 1 needs one. */
export function advanceKeyring(state: KeyringState, to: KeyRotationTarget, now: number, made?: string, requested?: string): KeyringState {
  const handled = requested ? { handled: requested } : state.handled !== undefined ? { handled: state.handled } : {};
  switch (to) {
    case 'adding':
      if (made === undefined) throw new Error('a rotation needs the new key');
      return { keys: [...state.keys, made], phase: 'adding', sinceMs: now, ...handled };
    case 'signing': {
      // the key step 1 added is the last; it moves first, the rest keep their order behind it
      const added = state.keys[state.keys.length - 1];
      if (added === undefined || state.keys.length < 2) return { keys: state.keys, ...handled };
      return { keys: [added, ...state.keys.slice(0, -1)], phase: 'signing', sinceMs: now, ...handled };
    }
    case 'done':
      return { keys: state.keys.slice(0, 1), ...handled };
  }
}

/** When the ring next needs a look (the end of its step), or undefined when steady. */
export function keyringStepAt(state: KeyringState, i: Pick<KeyRotationInputs, 'overlapMs' | 'graceMs'>): number | undefined {
  return state.phase === undefined ? undefined : (state.sinceMs ?? 0) + holdOf(state.phase, i);
}

/** The Secret's `key` text: one key per line, the signing one first. */
export function keyringText(state: Pick<KeyringState, 'keys'>): string {
  return `${state.keys.join('\n')}\n`;
}

/** The keys of a `key` text, the signing one first (blank lines and spaces dropped). */
export function keysOfText(text: string): string[] {
  return text
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l !== '');
}
