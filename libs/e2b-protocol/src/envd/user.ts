/**
 * envd's user: `Authorization: Basic base64("<user>:")` on RPCs, `username` on /files, or neither
 * (the default user). A guest here has one user, `user` (home /home/user); `root` is accepted as
 * the same account, since nothing in the guest runs with more.
 */
export const DEFAULT_USER = 'user';
const KNOWN = new Set(['user', 'root']);

export class UnknownUserError extends Error {
  override readonly name = 'UnknownUserError';
}

export function userOf(authorization: string | undefined, username: string | null = null): string {
  let user = username ?? '';
  if (authorization !== undefined && authorization !== '') {
    const m = /^Basic\s+([A-Za-z0-9+/=]+)$/i.exec(authorization.trim());
    if (m === null) throw new UnknownUserError('Authorization must be Basic base64("<user>:")');
    const decoded = Buffer.from(m[1] ?? '', 'base64').toString('utf8');
    user = decoded.slice(0, decoded.includes(':') ? decoded.indexOf(':') : undefined);
  }
  if (user === '') return DEFAULT_USER;
  if (!KNOWN.has(user)) throw new UnknownUserError(`user ${JSON.stringify(user.slice(0, 64))} does not exist in this sandbox`);
  return user;
}
