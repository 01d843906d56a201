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
