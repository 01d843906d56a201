import { z } from 'zod';

/** Why an object could not be read as T: the first offending field and the parser's message. */
export interface ParseFailure {
  /** Dotted path of the offending field (`spec.replicas`), '' when unknown. */
  fieldPath: string;
  message: string;
  uid?: string;
  resourceVersion?: string;
}

function pathOf(path: ReadonlyArray<PropertyKey>): string {
  return path
    .map((p) => (typeof p === 'number' ? `[${p}]` : String(p)))
    .join('.')
    .replace(/\.\[/g, '[');
}

function firstIssueField(issues: unknown): string | undefined {
  if (!Array.isArray(issues)) return undefined;
  const field = (issues[0] as { field?: unknown } | undefined)?.field;
  return typeof field === 'string' ? field : undefined;
}

/**
 * Accepts what parsers throw: scale-core's ObjectValidationError (`issues[].field`, message
 * naming every field), a ZodError, or an error carrying `fieldPath`/`path`. Anything else keeps
 * its message with an unknown path. Read by shape, so copies of either package both work.
 */
export function describeParseError(err: unknown): Pick<ParseFailure, 'fieldPath' | 'message'> {
  if (err instanceof z.ZodError) {
    const first = err.issues[0];
    return { fieldPath: first ? pathOf(first.path) : '', message: first?.message ?? err.message };
  }
  if (err instanceof Error) {
    const { fieldPath, path, issues } = err as { fieldPath?: unknown; path?: unknown; issues?: unknown };
    const issueField = firstIssueField(issues);
    if (issueField !== undefined) return { fieldPath: issueField, message: err.message };
    if (typeof fieldPath === 'string') return { fieldPath, message: err.message };
    if (typeof path === 'string') return { fieldPath: path, message: err.message };
    if (Array.isArray(path)) return { fieldPath: pathOf(path as PropertyKey[]), message: err.message };
    return { fieldPath: '', message: err.message };
  }
  return { fieldPath: '', message: String(err) };
}
