import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createLogger } from '@sandbox-scale/kube-runtime';
import { SandboxdClientSet } from '@sandbox-scale/sandboxd-client';
import { poolKeyFor } from '@sandbox-scale/scale-core';
import { ClaimGateway } from './claim-gateway';

const TEMPLATE = 'base:24.04';

describe('ClaimGateway against a node that stops answering', () => {
  let server: Server;
  let addr: string;
  const clients = new SandboxdClientSet({ token: 'root' });

  beforeAll(async () => {
    // accepts every request and never answers, like a partitioned node
    server = createServer(() => undefined);
    await new Promise<void>((res) => server.listen(0, '127.0.0.1', () => res()));
    addr = `127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(async () => {
    server.closeAllConnections();
    await new Promise<void>((res) => server.close(() => res()));
    await clients.close();
  });

  it('fails the claim after the call timeout instead of waiting forever', async () => {
    const inventory = [{ metadata: { name: 'hung' }, node: 'hung', address: addr, pools: [{ template: TEMPLATE, warm: 5 }] }];
    const gateway = new ClaimGateway({ clients, fleetToken: 'root', inventories: () => inventory, log: createLogger({ name: 'test', level: 'silent' }), callTimeoutMs: 200 });
    const t0 = Date.now();
    await expect(gateway.deliver({ namespace: 'ns', name: 'c1', key: poolKeyFor([{ image: TEMPLATE }], undefined) })).rejects.toThrow();
    expect(Date.now() - t0).toBeLessThan(5_000);
  });

  it('routes the next claim around the node that just timed out', async () => {
    const good = createServer((req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ id: 'sb_1', token: 't', deadline: '2099-01-01T00:00:00Z', owner_addr: goodAddr }));
    });
    await new Promise<void>((res) => good.listen(0, '127.0.0.1', () => res()));
    const goodAddr = `127.0.0.1:${(good.address() as AddressInfo).port}`;
    try {
      // the hung node advertises far more warm VMs, so it would win every power-of-two choice
      const inventory = [
        { metadata: { name: 'hung' }, node: 'hung', address: addr, pools: [{ template: TEMPLATE, warm: 1000 }] },
        { metadata: { name: 'good' }, node: 'good', address: goodAddr, pools: [{ template: TEMPLATE, warm: 1 }] },
      ];
      const gateway = new ClaimGateway({ clients, fleetToken: 'root', inventories: () => inventory, log: createLogger({ name: 'test', level: 'silent' }), callTimeoutMs: 200, rng: () => 0 });
      const key = poolKeyFor([{ image: TEMPLATE }], undefined);
      await expect(gateway.deliver({ namespace: 'ns', name: 'c2', key })).rejects.toThrow();
      await expect(gateway.deliver({ namespace: 'ns', name: 'c2', key })).resolves.toMatchObject({ node: 'good', claimId: 'sb_1' });
    } finally {
      good.closeAllConnections();
      await new Promise<void>((res) => good.close(() => res()));
    }
  });

  it('bounds the listing of deliveries on that node too', async () => {
    const inventory = [{ metadata: { name: 'hung' }, node: 'hung', address: addr, pools: [] }];
    const gateway = new ClaimGateway({ clients, fleetToken: 'root', inventories: () => inventory, log: createLogger({ name: 'test', level: 'silent' }), callTimeoutMs: 200 });
    await expect(gateway.findDeliveries({ namespace: 'ns', name: 'c1' })).rejects.toThrow();
  });
});
