import { checkpointName, MAX_SNAPSHOT_LABEL, ownerTag, parseCheckpointName, SNAPSHOT_LABEL } from './snapshot-owner';

/** sandboxd's checkpoint name rule. */
const NODE_NAME = /^[a-zA-Z0-9][a-zA-Z0-9._:/-]{0,62}$/;

describe('snapshot owner digest', () => {
  it('is one value per namespace/name, differing with either part and with where the two meet', () => {
    expect(ownerTag('team-a', 'src')).toBe(ownerTag('team-a', 'src'));
    const tags = new Set([
      ownerTag('team-a', 'src'),
      ownerTag('team-b', 'src'),
      ownerTag('team-a', 'src2'),
      ownerTag('team-a.s', 'rc'),
      ownerTag('team-as', 'rc'),
    ]);
    expect(tags.size).toBe(5);
  });

  it('fits the node name rule with the longest label, and reads back as written', () => {
    const tag = ownerTag('n'.repeat(63), 'x'.repeat(253));
    const label = `a${'b/.:-'.repeat(20)}`.slice(0, MAX_SNAPSHOT_LABEL);
    expect(SNAPSHOT_LABEL.test(label)).toBe(true);
    expect(SNAPSHOT_LABEL.test(`${label}c`)).toBe(false);
    const name = checkpointName(tag, label);
    expect(name).toMatch(NODE_NAME);
    expect(name.length).toBe(63);
    expect(parseCheckpointName(name)).toEqual({ tag, label });
    expect(parseCheckpointName(checkpointName(tag, undefined))).toEqual({ tag });
  });

  it('reads a name without a digest as a label only', () => {
    expect(parseCheckpointName('after-setup')).toEqual({ label: 'after-setup' });
    expect(parseCheckpointName('s:short/x')).toEqual({ label: 's:short/x' });
    expect(parseCheckpointName(undefined)).toEqual({});
  });
});
