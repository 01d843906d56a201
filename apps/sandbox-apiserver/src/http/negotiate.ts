/** What a response body should be, from the Accept header. */
export type ResponseShape =
  | { kind: 'object' }
  | { kind: 'table'; version: 'v1' | 'v1beta1' }
  | { kind: 'metadata'; version: 'v1' | 'v1beta1' }
  | { kind: 'discovery-v2'; version: 'v2' | 'v2beta1' };

interface MediaType {
  type: string;
  params: Record<string, string>;
}

function parseAccept(accept: string): MediaType[] {
  return accept
    .split(',')
    .map((part) => {
      const [type = '', ...rest] = part.split(';').map((s) => s.trim());
      const params: Record<string, string> = {};
      for (const p of rest) {
        const eq = p.indexOf('=');
        if (eq > 0) params[p.slice(0, eq).trim().toLowerCase()] = p.slice(eq + 1).trim();
      }
      return { type: type.toLowerCase(), params };
    })
    .filter((m) => m.type !== '');
}

const JSON_TYPES = new Set(['application/json', '*/*', 'application/*', 'application/yaml']);

function shapeOf(m: MediaType): ResponseShape | undefined {
  if (!JSON_TYPES.has(m.type)) return undefined;
  const { as, g, v } = m.params;
  if (as === undefined) return { kind: 'object' };
  if (g === 'meta.k8s.io' && (v === 'v1' || v === 'v1beta1')) {
    if (as === 'Table') return { kind: 'table', version: v };
    if (as === 'PartialObjectMetadata' || as === 'PartialObjectMetadataList') return { kind: 'metadata', version: v };
  }
  if (g === 'apidiscovery.k8s.io' && as === 'APIGroupDiscoveryList' && (v === 'v2' || v === 'v2beta1'))
    return { kind: 'discovery-v2', version: v };
  return undefined;
}

/** The first acceptable shape; plain objects when Accept is absent; undefined means 406. */
export function negotiate(accept: string | undefined): ResponseShape | undefined {
  if (accept === undefined || accept.trim() === '') return { kind: 'object' };
  for (const m of parseAccept(accept)) {
    const shape = shapeOf(m);
    if (shape !== undefined) return shape;
  }
  return undefined;
}
