/**
 * The root of every error this project throws on purpose. Callers test errors with the `is…`
 * predicates, which compare `name` and walk the `cause` chain, so they work across package
 * copies and through wrapping.
 */
export class SandboxScaleError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = new.target.name;
  }
}

/** Walks err, err.cause, err.cause.cause... and returns the first error named `name`. */
export function findInCauseChain<T extends Error>(err: unknown, name: string): T | undefined {
  const seen = new Set<unknown>();
  let cur: unknown = err;
  while (cur instanceof Error && !seen.has(cur)) {
    if (cur.name === name) return cur as T;
    seen.add(cur);
    cur = (cur as { cause?: unknown }).cause;
  }
  return undefined;
}
