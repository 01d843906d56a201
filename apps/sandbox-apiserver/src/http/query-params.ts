import { dryRunOf } from '../resource/dry-run';
import type { IncludeObject } from '../storage/sandbox-table';

/** `dryRun=All` on the query; any other value is a 400. */
export function dryRunParam(url: URL): boolean {
  return dryRunOf(url.searchParams.getAll('dryRun'));
}

/** `includeObject` of a Table request; kube's default is Metadata. */
export function includeObjectOf(v: string | null): IncludeObject {
  return v === 'None' || v === 'Object' ? v : 'Metadata';
}

/** Go's strconv.ParseBool spellings of true, which kube-apiserver accepts for boolean query parameters such as `watch`. */
const TRUE_SPELLINGS: ReadonlySet<string> = new Set(['1', 't', 'T', 'true', 'TRUE', 'True']);

/** Whether the query asks for a watch (`watch=true`, `watch=1`, …), read the one way everywhere. */
export function isWatchQuery(q: URLSearchParams): boolean {
  return TRUE_SPELLINGS.has(q.get('watch') ?? '');
}
