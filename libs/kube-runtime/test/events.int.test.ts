import { z } from 'zod';
import { createTestNamespace, deleteNamespace, eventually, testKubeConfig } from '@sandbox-scale/e2e';
import { ConfigMapResource, EventResource, ResourceClient, createEventRecorder, involvedObjectOf, parseUntyped } from '../src/index';
import { captureLog } from '../src/testing';

const kc = testKubeConfig();
let ns: string;

beforeAll(async () => {
  ns = await createTestNamespace(kc, 'kr-events');
});
afterAll(async () => {
  await deleteNamespace(kc, ns);
});

const EventListSchema = z.object({
  items: z.array(
    z.object({
      metadata: z.object({ name: z.string() }),
      reason: z.string().optional(),
      note: z.string().optional(),
      type: z.string().optional(),
      reportingController: z.string().optional(),
      regarding: z.object({ kind: z.string().optional(), name: z.string().optional(), uid: z.string().optional() }).optional(),
      series: z.object({ count: z.number() }).optional(),
    }),
  ),
});

describe('event recorder', () => {
  it('writes an Event visible by listing, and folds repeats into its series count', async () => {
    const cm = parseUntyped(await new ResourceClient(kc, ConfigMapResource).create(ns, { metadata: { name: 'subject' } }));
    const recorder = createEventRecorder(kc, {
      reportingController: 'sandbox-scale/kube-runtime-test',
      reportingInstance: 'int-test',
      log: captureLog().log,
      flushIntervalMs: 300,
    });
    const regarding = involvedObjectOf({ ...cm, apiVersion: 'v1', kind: 'ConfigMap' });
    for (let i = 0; i < 20; i++)
      recorder.record(regarding, { type: 'Warning', reason: 'PushFailed', action: 'PushTargets', note: 'node n1 unreachable' });
    const events = new ResourceClient(kc, EventResource);
    const list = async () => EventListSchema.parse(await events.list({ namespace: ns })).items;
    const [ev] = await eventually(
      async () => {
        const items = await list();
        if (items.length !== 1 || items[0]?.series?.count !== 20) throw new Error(`events: ${JSON.stringify(items)}`);
        return items;
      },
      { timeoutMs: 10_000 },
    );
    expect(ev).toMatchObject({
      reason: 'PushFailed',
      type: 'Warning',
      note: 'node n1 unreachable',
      reportingController: 'sandbox-scale/kube-runtime-test',
      regarding: { kind: 'ConfigMap', name: 'subject', uid: cm.metadata.uid },
    });
    // Also readable through core/v1, which is what `kubectl describe` shows.
    const core = z.object({ items: z.array(z.object({ reason: z.string(), count: z.number().optional() })) }).parse(
      await new ResourceClient(kc, { group: '', version: 'v1', plural: 'events', kind: 'Event', namespaced: true }).list({
        namespace: ns,
      }),
    );
    expect(core.items).toEqual([expect.objectContaining({ reason: 'PushFailed' })]);
    await recorder.stop();
  });
});
