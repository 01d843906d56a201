import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';

// The repository must stand alone: every relative link of the README and docs/ names a file in
// it, and no file (docs, source comments, charts, scripts) cites a document that is not in it or
// a numbered section (§4.2) of one. A fact that matters is stated where it is needed instead.
const root = resolve(__dirname, '../..');
const CITED_DOCUMENT =
  /\b(STACK|DESIGN|REVIEW|STYLE)\.md\b|\bk8s-api\.md\b|\bscale-contracts\.md\b|\bsandboxd-api\.md\b|\be2b-api\.md\b|\bspec\/[\w-]+\.md\b/;
// a section sign cites a section; an RFC's own sections are public and may be cited
const SECTION_CITATION = /(?<!RFC \d{3,5} \()(?<!RFC \d{3,5} )§\s?\d/;
const TEXT = /\.(ts|mts|cts|js|mjs|cjs|md|ya?ml|json|tpl|sh|txt|py)$|(^|\/)(Dockerfile|run)$/;

/** Tracked files plus new ones not ignored: what a clone (or this commit) holds. */
function repositoryFiles(): string[] {
  const out = execFileSync('git', ['ls-files', '--cached', '--others', '--exclude-standard'], { cwd: root, encoding: 'utf8' });
  return out.split('\n').filter((f) => f !== '' && TEXT.test(f) && f !== 'e2e/test/docs-links.test.ts' && existsSync(join(root, f)));
}

function relativeLinks(text: string): string[] {
  const targets = [...text.matchAll(/\]\(([^)\s]+)\)/g)].map((m) => m[1] ?? '');
  return targets.filter((t) => !/^[a-z][a-z0-9+.-]*:/i.test(t) && !t.startsWith('#')).map((t) => t.split('#')[0] ?? '');
}

/** The lines of text that cite a document that is not in the repository, as `path:line: text`. */
export function citations(path: string, text: string): string[] {
  const found: string[] = [];
  text.split('\n').forEach((line, i) => {
    const document = CITED_DOCUMENT.exec(line);
    // a document of that name that the repository does hold (docs/data-plane.md) may be cited
    const named = document && !existsSync(join(root, 'docs', document[0].replace(/^spec\//, ''))) ? document[0] : undefined;
    if (named !== undefined || SECTION_CITATION.test(line)) found.push(`${path}:${i + 1}: ${line.trim().slice(0, 120)}`);
  });
  return found;
}

const files = repositoryFiles();
const markdown = files.filter((f) => f === 'README.md' || (f.startsWith('docs/') && f.endsWith('.md')));

describe('the repository stands alone', () => {
  it.each(markdown)('%s links only to files in the repository', (file) => {
    const text = readFileSync(join(root, file), 'utf8');
    const missing = relativeLinks(text).filter((t) => !existsSync(resolve(dirname(join(root, file)), decodeURIComponent(t))));
    expect(missing).toEqual([]);
  });

  it('no file cites a document, or a section of one, that is not in the repository', () => {
    const found = files.flatMap((f) => citations(f, readFileSync(join(root, f), 'utf8')));
    expect(found).toEqual([]);
  });

  it('finds what it looks for', () => {
    // the check can fail: each kind of citation is caught, and the allowed ones pass
    expect(citations('a.ts', '// see k8s-api.md for the rules')).toHaveLength(1);
    expect(citations('a.ts', '// the order of §4.2 applies')).toHaveLength(1);
    expect(citations('a.md', 'read spec/e2b-api.md first')).toHaveLength(1);
    expect(citations('a.ts', '/** hop-by-hop headers (RFC 9110 §7.6.1) */')).toEqual([]);
    expect(citations('a.md', 'see docs/data-plane.md')).toEqual([]);
    expect(files.length).toBeGreaterThan(200);
    expect(markdown.length).toBeGreaterThan(5);
  });
});
