import { closeSync, constants, fchmodSync, openSync, writeSync } from 'node:fs';

/**
 * Writes a token to `path`, readable by its owner only. A mode given when opening applies only to
 * a file the call creates, so a file that already exists (say 0644) is narrowed to 0600 before
 * the token is written into it. A symbolic link is not followed: the token goes to the path named.
 */
export function writeTokenFile(path: string, token: string): void {
  const fd = openSync(path, constants.O_WRONLY | constants.O_CREAT | constants.O_TRUNC | constants.O_NOFOLLOW, 0o600);
  try {
    fchmodSync(fd, 0o600);
    writeSync(fd, `${token}\n`);
  } finally {
    closeSync(fd);
  }
}
