import { invalidPromotedName, promotedTemplateName, PROMOTED_PREFIX } from './promoted-template';
import { poolKeyFor } from './pool-key';

describe('promotedTemplateName', () => {
  it('scopes a name to its namespace, so two namespaces never share a promoted template', () => {
    expect(promotedTemplateName('team-a', 'py')).toMatch(/^promoted\.\.[0-9a-f]{24}$/);
    expect(promotedTemplateName('team-a', 'py')).toBe(promotedTemplateName('team-a', 'py'));
    // within sandboxd's names: a letter or digit first, at most 63 characters
    expect(promotedTemplateName('a'.repeat(63), 'b'.repeat(63))).toMatch(/^[a-zA-Z0-9][a-zA-Z0-9._:/-]{0,62}$/);
    expect(promotedTemplateName('team-a', 'py')).not.toBe(promotedTemplateName('team-b', 'py'));
  });

  it('can never be an image reference, which is what pool keys are made of', () => {
    for (const image of ['ghcr.io/example/tenant-b:1', 'python:3.12', 'base:24.04']) {
      const key = poolKeyFor([{ image }], undefined);
      expect(key.template.startsWith(PROMOTED_PREFIX)).toBe(false);
    }
  });

  it('refuses a user name that is an image reference or could leave the namespace', () => {
    for (const bad of ['ghcr.io/example/tenant-b:1', '../team-b/py', 'a/b', 'Py', '', '-x', 'x'.repeat(64)])
      expect(invalidPromotedName(bad)).toBeDefined();
    for (const ok of ['py', 'py-3.12', 'agent_v2', 'a']) expect(invalidPromotedName(ok)).toBeUndefined();
  });
});
