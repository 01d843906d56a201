import { mkdtempSync, readFileSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { writeTokenFile } from './token-file';

describe('writeTokenFile', () => {
  let dir: string;
  beforeEach(() => (dir = mkdtempSync(join(tmpdir(), 'token-file-'))));
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it('creates the file readable by its owner only', () => {
    const p = join(dir, 'tok');
    writeTokenFile(p, 'secret');
    expect(readFileSync(p, 'utf8')).toBe('secret\n');
    expect(statSync(p).mode & 0o777).toBe(0o600);
  });

  it('narrows a file that existed with a wider mode before writing the token', () => {
    const p = join(dir, 'tok');
    writeFileSync(p, 'old contents that are longer', { mode: 0o644 });
    expect(statSync(p).mode & 0o777).toBe(0o644);
    writeTokenFile(p, 'secret');
    expect(statSync(p).mode & 0o777).toBe(0o600);
    expect(readFileSync(p, 'utf8')).toBe('secret\n');
  });

  it('does not follow a symbolic link', () => {
    const target = join(dir, 'elsewhere');
    writeFileSync(target, '');
    const link = join(dir, 'tok');
    symlinkSync(target, link);
    expect(() => writeTokenFile(link, 'secret')).toThrow(/ELOOP|symbolic/);
    expect(readFileSync(target, 'utf8')).toBe('');
  });
});
