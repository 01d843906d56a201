import { BadRequestError } from '@sandbox-scale/scale-core';

/**
 * Whether `dryRun` values ask for a dry run: the rule both the query parameter (`dryRun=All`)
 * and a DeleteOptions body follow; any value but All is a 400.
 */
export function dryRunOf(values: readonly string[]): boolean {
  for (const v of values)
    if (v !== 'All') throw new BadRequestError(`unsupported dryRun value ${JSON.stringify(v)}: only All is supported`);
  return values.length > 0;
}
