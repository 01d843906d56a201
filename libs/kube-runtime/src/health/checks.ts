/** A check passes by returning (true or nothing); it fails by returning false or throwing. */
export type Check = () => boolean | void | Promise<boolean | void>;

export interface CheckResult {
  name: string;
  ok: boolean;
  reason?: string;
}

/** Named checks for one endpoint (/healthz or /readyz), run together on each probe. */
export class CheckSet {
  private readonly checks = new Map<string, Check>();

  add(name: string, check: Check): void {
    this.checks.set(name, check);
  }

  remove(name: string): void {
    this.checks.delete(name);
  }

  names(): string[] {
    return [...this.checks.keys()];
  }

  async run(): Promise<CheckResult[]> {
    return Promise.all(
      [...this.checks.entries()].map(async ([name, check]): Promise<CheckResult> => {
        try {
          const r = await check();
          return r === false ? { name, ok: false, reason: 'not ready' } : { name, ok: true };
        } catch (err) {
          return { name, ok: false, reason: err instanceof Error ? err.message : String(err) };
        }
      }),
    );
  }
}

/**
 * The body kube-apiserver style probes answer with: `[+]name ok` / `[-]name failed: reason`.
 * A failure answers `failedStatus`: 503 for a controller's probe port, 500 where the server
 * mirrors kube-apiserver's own /healthz, /livez and /readyz.
 */
export function renderChecks(
  endpoint: string,
  results: CheckResult[],
  verbose: boolean,
  opts: { failedStatus?: number } = {},
): { status: number; body: string } {
  const failed = results.filter((r) => !r.ok);
  const lines = results
    .filter((r) => verbose || !r.ok)
    .map((r) => (r.ok ? `[+]${r.name} ok` : `[-]${r.name} failed: ${r.reason ?? 'unknown'}`));
  if (failed.length === 0) return { status: 200, body: verbose ? `${lines.join('\n')}\n${endpoint} check passed\n` : 'ok' };
  return { status: opts.failedStatus ?? 503, body: `${lines.join('\n')}\n${endpoint} check failed\n` };
}
