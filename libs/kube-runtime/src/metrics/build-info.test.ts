import { Registry } from 'prom-client';
import { registerBuildInfo } from './build-info';

describe('registerBuildInfo', () => {
  it('exports one series of 1 naming the app, the stamped build and the Node.js version', async () => {
    const registry = new Registry();
    registerBuildInfo(registry, 'warmpool-driver', { SANDBOX_SCALE_VERSION: '1.2.3', SANDBOX_SCALE_REVISION: 'abc123' });
    expect((await registry.getSingleMetric('sandbox_scale_build_info')?.get())?.values).toEqual([
      { value: 1, labels: { app: 'warmpool-driver', version: '1.2.3', revision: 'abc123', node_version: process.version } },
    ]);
  });

  it('says unknown for a build that was not stamped', async () => {
    const registry = new Registry();
    registerBuildInfo(registry, 'claim-controller', { SANDBOX_SCALE_VERSION: '' });
    expect((await registry.getSingleMetric('sandbox_scale_build_info')?.get())?.values[0]?.labels).toMatchObject({
      version: 'unknown',
      revision: 'unknown',
    });
  });
});
