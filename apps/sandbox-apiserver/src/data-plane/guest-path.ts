import { BadRequestError } from '@sandbox-scale/scale-core';

/** The longest guest path accepted (Linux's PATH_MAX). */
export const MAX_GUEST_PATH = 4096;

// eslint-disable-next-line no-control-regex -- control characters are exactly what is refused
const CONTROL = /[\u0000-\u001f\u007f]/;

/**
 * A guest path from a request (`?path=`, a tar entry), normalised to its absolute form: `/` is
 * the sandbox's root and a relative path is relative to it. Refused with a 400 before anything
 * reaches the node: an empty path, NUL or another control character, and any `..` segment, so no
 * request can even name a place outside the root (the agent checks again, symlinks included).
 */
export function guestPath(raw: string | null | undefined, what = 'path'): string {
  if (raw === null || raw === undefined || raw === '') throw new BadRequestError(`${what} is required (?path=/work/file)`);
  if (raw.length > MAX_GUEST_PATH) throw new BadRequestError(`${what} is longer than ${MAX_GUEST_PATH} characters`);
  if (CONTROL.test(raw)) throw new BadRequestError(`${what} ${JSON.stringify(raw)} holds a control character`);
  const segments = raw.split('/').filter((s) => s !== '' && s !== '.');
  if (segments.includes('..'))
    throw new BadRequestError(`${what} ${JSON.stringify(raw)} holds a ".." segment: paths stay inside the sandbox`);
  return `/${segments.join('/')}`;
}

/** A path below `dir` (both absolute and normalised). */
export function joinGuest(dir: string, relative: string): string {
  return dir === '/' ? `/${relative}` : `${dir}/${relative}`;
}

/** The parent directory of a normalised absolute path (`/` for a top-level one and for the root). */
export function parentOf(path: string): string {
  const at = path.lastIndexOf('/');
  return at <= 0 ? '/' : path.slice(0, at);
}

/** The last segment of a normalised absolute path; '' for the root. */
export function baseOf(path: string): string {
  return path.slice(path.lastIndexOf('/') + 1);
}

/** `?mode=0755`: permission bits in octal, at most 07777. */
export function fileMode(raw: string | null): number | undefined {
  if (raw === null || raw === '') return undefined;
  if (!/^[0-7]{1,5}$/.test(raw)) throw new BadRequestError(`mode ${JSON.stringify(raw)} is not an octal permission (e.g. 0644)`);
  const mode = parseInt(raw, 8);
  if (mode > 0o7777) throw new BadRequestError(`mode ${raw} is over 07777`);
  return mode;
}

/** A boolean query flag: absent or `false`/`0` is false, `true`/`1` (or present empty) is true. */
export function flag(params: URLSearchParams, name: string): boolean {
  const v = params.get(name);
  if (v === null || v === 'false' || v === '0') return false;
  if (v === '' || v === 'true' || v === '1') return true;
  throw new BadRequestError(`${name} must be true or false, not ${JSON.stringify(v)}`);
}
