import { createHmac } from 'node:crypto';
import { fleetClients, isNoNodeToken, NodeTokens, nodeToken, type AddressedInventory } from '../src/index';
import { replyJson, startStubNode, type StubNode } from './stub-node';

const KEY = 'fleet-key-for-tests';
const inv = (name: string, address?: string, node = name): AddressedInventory => ({
  metadata: { name },
  node,
  ...(address !== undefined ? { address } : {}),
});

describe('nodeToken', () => {
  it('is the documented HMAC of the node name, different for every node and key', () => {
    const want = createHmac('sha256', KEY).update('sandbox-scale/sandboxd-node-token/v1\nnode-a').digest('hex');
    expect(nodeToken(KEY, 'node-a')).toBe(want);
    expect(nodeToken(KEY, 'node-a')).toMatch(/^[0-9a-f]{64}$/);
    expect(nodeToken(KEY, 'node-b')).not.toBe(want);
    expect(nodeToken(`${KEY}x`, 'node-a')).not.toBe(want);
    // the node's token says nothing of the key or of another node's
    expect(want).not.toContain(KEY);
    expect(() => nodeToken('', 'node-a')).toThrow(/non-empty fleet key/);
  });
});

describe('NodeTokens', () => {
  it("gives the address of a node's own inventory that node's token, and refuses every other address", () => {
    let list: AddressedInventory[] = [inv('node-a', '10.0.0.1:7777'), inv('node-b', 'http://10.0.0.2:7777')];
    const tokens = new NodeTokens(KEY, () => list);
    expect(tokens.forAddress('http://10.0.0.1:7777')).toBe(nodeToken(KEY, 'node-a'));
    expect(tokens.forAddress('10.0.0.2:7777')).toBe(nodeToken(KEY, 'node-b'));
    const refused = (url: string): boolean => {
      try {
        tokens.forAddress(url);
        return false;
      } catch (err) {
        return isNoNodeToken(err);
      }
    };
    expect(refused('10.0.0.9:7777')).toBe(true);
    // a node that names another node in its inventory, or writes a part object with an address, is not sent that node's token
    list = [...list, inv('node-c', '10.0.0.3:7777', 'node-a'), inv('node-a.part-1', '10.0.0.4:7777', 'node-a')];
    expect(refused('10.0.0.3:7777')).toBe(true);
    expect(refused('10.0.0.4:7777')).toBe(true);
    // two nodes advertising one address: neither is sent its token there
    list = [inv('node-a', '10.0.0.1:7777'), inv('node-d', '10.0.0.1:7777')];
    expect(refused('10.0.0.1:7777')).toBe(true);
    expect(() => new NodeTokens('', () => [])).toThrow(/need a fleet key/);
  });
});

describe('fleetClients', () => {
  let a: StubNode;
  let b: StubNode;
  beforeEach(async () => {
    [a, b] = await Promise.all([startStubNode(), startStubNode()]);
    for (const n of [a, b]) n.setHandler((_c, res) => replyJson(res, 200, { sandboxes: [] }));
  });
  afterEach(async () => {
    await Promise.all([a.close(), b.close()]);
  });

  it('sends each node its own root token with per-node tokens, and nothing to an address no inventory advertises', async () => {
    const list = [inv('node-a', a.url), inv('node-b', b.url.replace('http://', ''))];
    const set = fleetClients({ fleetToken: KEY, mode: 'per-node', inventories: () => list });
    try {
      await set.forNode(a.url).sandboxes();
      await set.forNode(b.url).sandboxes();
      expect(a.calls.map((c) => c.authorization)).toEqual([`Bearer ${nodeToken(KEY, 'node-a')}`]);
      expect(b.calls.map((c) => c.authorization)).toEqual([`Bearer ${nodeToken(KEY, 'node-b')}`]);
      const unknown = await startStubNode();
      try {
        await expect(set.forNode(unknown.url).sandboxes()).rejects.toThrow(/no single NodeInventory advertises/);
        expect(unknown.calls).toHaveLength(0);
      } finally {
        await unknown.close();
      }
      // a call's own token (a sandbox token) still wins
      await set.forNode(a.url).sandboxes(undefined, { token: 'sandbox-token' });
      expect(a.calls[1]?.authorization).toBe('Bearer sandbox-token');
    } finally {
      await set.close();
    }
  });

  it('sends the fleet token itself in fleet mode', async () => {
    const set = fleetClients({ fleetToken: KEY, mode: 'fleet', inventories: () => [] });
    try {
      await set.forNode(a.url).sandboxes();
      expect(a.calls[0]?.authorization).toBe(`Bearer ${KEY}`);
    } finally {
      await set.close();
    }
  });
});
