/**
 * The phase of a live sandbox, one vocabulary from the node to the API: sandboxd reports
 * `hibernated` / `archived` flags, the inventory publisher turns them into these strings in
 * NodeInventory entries, and every read path that asks a node directly uses the same mapping.
 * Synthesis stamps the string verbatim as the phase label and the Ready reason, so a second
 * spelling would make `-l sandbox.cocoonstack.io/phase=Hibernated` miss sandboxes.
 */
export const SANDBOX_PHASES = {
  running: 'Running',
  /** Memory snapshot on the node; keeps its deadline. Ready=False. */
  hibernated: 'Hibernated',
  /** Snapshot moved off the node; still a live claim. Ready=False. */
  archived: 'Archived',
} as const;

export type SandboxPhase = (typeof SANDBOX_PHASES)[keyof typeof SANDBOX_PHASES];

/** Archived wins over hibernated: an archived sandbox is hibernated too, and further away. */
export function sandboxPhaseOf(s: { readonly hibernated?: boolean; readonly archived?: boolean }): SandboxPhase {
  if (s.archived === true) return SANDBOX_PHASES.archived;
  if (s.hibernated === true) return SANDBOX_PHASES.hibernated;
  return SANDBOX_PHASES.running;
}
