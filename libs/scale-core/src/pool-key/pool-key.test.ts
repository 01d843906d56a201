import { comparePoolKeys, normalizePoolKey, poolKeyFor, poolKeyId, poolKeyMatches } from './pool-key';

describe('poolKeyFor', () => {
  const image = 'ghcr.io/cocoonstack/sandbox/rt@sha256:deadbeef';

  it('takes the first image, net none by default and the size class', () => {
    expect(poolKeyFor([{ image }], '')).toEqual({ template: image, net: 'none', size: 'small' });
    expect(poolKeyFor([{ image }], undefined)).toEqual({ template: image, net: 'none', size: 'small' });
  });

  it('keeps a given net verbatim, even one it does not know', () => {
    expect(poolKeyFor([{ image }], 'egress').net).toBe('egress');
    expect(poolKeyFor([{ image }], 'gpu-lane').net).toBe('gpu-lane');
  });

  it('has an empty template without containers', () => {
    expect(poolKeyFor([], 'egress')).toEqual({ template: '', net: 'egress', size: 'small' });
  });

  it('derives the size from resources', () => {
    expect(poolKeyFor([{ image, resources: { requests: { cpu: '2', memory: '4Gi' } } }], '').size).toBe('medium');
  });
});

describe('pool key normalisation', () => {
  it('reads empty net as none and empty size as small', () => {
    expect(normalizePoolKey({ template: 'img', net: '', size: '' })).toEqual({ template: 'img', net: 'none', size: 'small' });
    expect(normalizePoolKey({ template: 'img' })).toEqual({ template: 'img', net: 'none', size: 'small' });
  });

  it('matches a pool advertised without net and size against {img, none, small}', () => {
    expect(poolKeyMatches({ template: 'img' }, { template: 'img', net: 'none', size: 'small' })).toBe(true);
  });

  it('does not match a different net, size or template', () => {
    expect(poolKeyMatches({ template: 'img' }, { template: 'img', net: 'egress' })).toBe(false);
    expect(poolKeyMatches({ template: 'img' }, { template: 'img', size: 'large' })).toBe(false);
    expect(poolKeyMatches({ template: 'img:1' }, { template: 'img' })).toBe(false);
  });

  it('never normalises the template', () => {
    expect(poolKeyMatches({ template: 'docker.io/library/img' }, { template: 'img' })).toBe(false);
  });

  it('gives equal ids to keys that normalise equal, and different ids otherwise', () => {
    expect(poolKeyId({ template: 'img', net: '' })).toBe(poolKeyId({ template: 'img', net: 'none', size: 'small' }));
    expect(poolKeyId({ template: 'a', net: 'b' })).not.toBe(poolKeyId({ template: 'a\u0000b' }));
  });

  it('orders keys by template, then net, then size, by code units', () => {
    const keys = [
      { template: 'b', net: 'none', size: 'small' },
      { template: 'a', net: 'none', size: 'small' },
      { template: 'a', net: 'egress', size: 'small' },
      { template: 'B', net: 'none', size: 'small' },
    ];
    expect([...keys].sort(comparePoolKeys).map((k) => `${k.template}/${k.net}`)).toEqual(['B/none', 'a/egress', 'a/none', 'b/none']);
  });
});
