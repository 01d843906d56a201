import { randomBytes } from 'node:crypto';
import { createLogger } from '@sandbox-scale/kube-runtime';
import { SandboxdClientSet } from '@sandbox-scale/sandboxd-client';
import { startSim, type Sim } from '@sandbox-scale/sandboxd-sim';
import { poolKeyFor, OwnerRefKey } from '@sandbox-scale/scale-core';
import { ClaimGateway } from '../src/index';

/** The key every process of this test proves claim references with. */
const CLAIM_REF_KEY = new OwnerRefKey(randomBytes(32));

const TEMPLATE = 'base:24.04';
const key = poolKeyFor([{ image: TEMPLATE }], undefined);

describe('ClaimGateway when a node hands over a VM but its reply is lost', () => {
  let sim: Sim;
  const clients = new SandboxdClientSet({ token: 'root' });

  beforeAll(async () => {
    sim = await startSim({ nodes: 2, speed: 0, token: 'root', basePort: 0, pools: [{ template: TEMPLATE, warm: 3 }] });
  });
  afterAll(async () => {
    await clients.close();
    await sim.stop();
  });

  it.each(['invalid-json', 'wrong-shape', 'oversized'] as const)(
    'adopts the delivery on that node instead of claiming twice (%s reply)',
    async (mode) => {
      const [a, b] = sim.nodes;
      if (!a || !b) throw new Error('two nodes expected');
      sim.node(a.name).setFaults({ malformed: { claim: mode } });
      // node a advertises far more warm VMs, so the power-of-two choice lands there first
      const inventory = [
        { metadata: { name: a.name }, node: a.name, address: a.addr, pools: [{ template: TEMPLATE, warm: 1000 }] },
        { metadata: { name: b.name }, node: b.name, address: b.addr, pools: [{ template: TEMPLATE, warm: 1 }] },
      ];
      const gateway = new ClaimGateway({
        refKey: CLAIM_REF_KEY,
        clients,
        fleetToken: 'root',
        inventories: () => inventory,
        log: createLogger({ name: 'test', level: 'silent' }),
        rng: () => 0,
      });
      const name = `c-${mode}`;
      const owner = { kind: 'SandboxClaim' as const, uid: `uid-${mode}` };
      const got = await gateway.deliver({ namespace: 'ns', name, owner, key });
      const ref = gateway.claimRefOf({ ...owner, namespace: 'ns', name });
      sim.node(a.name).clearFaults();

      expect(got.node).toBe(a.name);
      const onA = await clients.forNode(a.url).sandboxes(ref);
      const onB = await clients.forNode(b.url).sandboxes(ref);
      expect(onA.map((r) => r.id)).toEqual([got.claimId]);
      expect(onB).toEqual([]);
      expect(got.token.length).toBeGreaterThan(0);
    },
  );
});
