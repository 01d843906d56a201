import { randomBytes } from 'node:crypto';
import { z } from 'zod';
import {
  DNS1123_LABEL,
  DNS1123_LABEL_MAX_LENGTH,
  DNS1123_SUBDOMAIN,
  DNS1123_SUBDOMAIN_MAX_LENGTH,
  EXTENSIONS_GROUP,
  InvalidError,
  type StatusCause,
} from '@sandbox-scale/scale-core';

/** Body of `POST /v1/claims`. */
export const FastClaimRequestSchema = z.strictObject({
  namespace: z.string().max(DNS1123_LABEL_MAX_LENGTH).regex(DNS1123_LABEL, 'must be a DNS label'),
  name: z.string().max(DNS1123_SUBDOMAIN_MAX_LENGTH).regex(DNS1123_SUBDOMAIN, 'must be a DNS subdomain').optional(),
  warmPool: z.string().min(1).max(253),
  ttlSeconds: z.number().int().min(0).max(86_400).optional(),
});
export type FastClaimRequest = z.infer<typeof FastClaimRequestSchema>;

/** Parses the body or throws a 422 Invalid naming every bad field (causes). */
export function parseFastClaimRequest(body: unknown): FastClaimRequest & { name: string } {
  const r = FastClaimRequestSchema.safeParse(body);
  if (!r.success) {
    const causes: StatusCause[] = r.error.issues.map((i) => ({
      reason: 'FieldValueInvalid',
      field: i.path.join('.') || '<body>',
      message: i.message,
    }));
    throw new InvalidError({ group: EXTENSIONS_GROUP, kind: 'SandboxClaim' }, '', causes);
  }
  return { ...r.data, name: r.data.name ?? `${r.data.warmPool}-${randomBytes(3).toString('hex')}`.slice(0, 253) };
}
