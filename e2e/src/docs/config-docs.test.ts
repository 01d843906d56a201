import { readFileSync } from 'node:fs';
import { CONFIG_DOC, renderConfigDocs } from './config-docs';

describe('docs/configuration.md', () => {
  it('matches what the apps print for --help (regenerate with npx nx run e2e:docs)', () => {
    expect(readFileSync(CONFIG_DOC, 'utf8')).toBe(renderConfigDocs());
  }, 60_000);
});
