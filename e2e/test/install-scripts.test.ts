import { execFileSync } from 'node:child_process';
import { resolve } from 'node:path';
import { z } from 'zod';

// `npm ci` on a fresh machine prints no warning: every dependency whose install script runs is
// listed in package.json's allowScripts, which npm 11 reads (and npm 12 enforces).
const root = resolve(__dirname, '../..');
const PendingSchema = z.object({ allowScripts: z.array(z.object({ name: z.string() })) });

describe('install scripts', () => {
  it('leaves no dependency with an install script unreviewed', () => {
    const out = execFileSync('npm', ['install-scripts', 'ls', '--json'], { cwd: root, encoding: 'utf8' });
    expect(PendingSchema.parse(JSON.parse(out)).allowScripts.map((p) => p.name)).toEqual([]);
  });
});
