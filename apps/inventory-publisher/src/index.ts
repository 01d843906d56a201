// Public API of the inventory-publisher app (for in-process tests and benches).
export { buildInventory, keepTransitionTimes, markStale, sameInventory } from './build-inventory';
export type { InventoryBody, NodeSnapshot } from './build-inventory';
export { bodyBytes, InventoryTooLargeError, isInventoryTooLarge, MAX_INVENTORY_PARTS, splitInventory, storedBody } from './split-inventory';
export { advertiseAddressOf, InventoryPublisherFlagsSchema, noticeTargetOfFlags, publisherConfigFromFlags } from './config';
export type { NoticeTarget, PublisherConfig, InventoryPublisherFlags } from './config';
export { diffEntries, entryKey, NodeNotifier } from './node-notifier';
export type { NoticeResult, NoticeSender } from './node-notifier';
export { isNoticeRefused, NoticeClient, NoticeRefusedError, replicasOfSlice } from './notice-client';
export { InventoryPublisher, NodeInventoryResource } from './publisher';
export type { InventoryPublisherOptions } from './publisher';
export type { PublishResult } from './publisher-metrics';
export { startPublisher } from './start-publisher';
export type { RunningPublisher, StartPublisherOptions } from './start-publisher';
