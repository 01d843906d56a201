/** An object as PartialObjectMetadata: its metadata only, for `as=PartialObjectMetadata` and table rows. */
export function metadataOnly(s: { metadata: object }, version = 'v1'): Record<string, unknown> {
  return { kind: 'PartialObjectMetadata', apiVersion: `meta.k8s.io/${version}`, metadata: s.metadata };
}
