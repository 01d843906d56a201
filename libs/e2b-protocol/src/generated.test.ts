import { execFileSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative, resolve } from 'node:path';

const LIB = resolve(__dirname, '..');
const BIN = resolve(LIB, '../../node_modules/.bin');

function files(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true, recursive: true })
    .filter((e) => e.isFile())
    .map((e) => relative(dir, join(e.parentPath, e.name)))
    .sort();
}

describe('src/gen', () => {
  it('is what buf and protoc-gen-es generate from proto/ (npx nx run e2b-protocol:generate)', () => {
    const out = mkdtempSync(join(tmpdir(), 'e2b-gen-'));
    try {
      execFileSync(join(BIN, 'buf'), ['generate', '-o', out], {
        cwd: LIB,
        env: { ...process.env, PATH: `${BIN}:${process.env.PATH ?? ''}` },
      });
      const fresh = join(out, 'src/gen');
      const kept = join(LIB, 'src/gen');
      expect(files(kept)).toEqual(files(fresh));
      for (const f of files(fresh)) expect(readFileSync(join(kept, f), 'utf8')).toBe(readFileSync(join(fresh, f), 'utf8'));
    } finally {
      rmSync(out, { recursive: true, force: true });
    }
  });
});
