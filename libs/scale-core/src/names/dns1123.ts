/**
 * apimachinery's validation.IsDNS1123Label and IsDNS1123Subdomain: what namespaces, object
 * names and label key prefixes may be. The `_FMT` strings are the regexes Kubernetes names in
 * its messages; the length limits are checked apart so a message can name the one that failed.
 */
export const DNS1123_LABEL_FMT = '[a-z0-9]([-a-z0-9]*[a-z0-9])?';
export const DNS1123_SUBDOMAIN_FMT = `${DNS1123_LABEL_FMT}(\\.${DNS1123_LABEL_FMT})*`;
export const DNS1123_LABEL_MAX_LENGTH = 63;
export const DNS1123_SUBDOMAIN_MAX_LENGTH = 253;
/** The pattern only; with zod, pair it with `.max(DNS1123_LABEL_MAX_LENGTH)`. */
export const DNS1123_LABEL = new RegExp(`^${DNS1123_LABEL_FMT}$`);
/** The pattern only; with zod, pair it with `.max(DNS1123_SUBDOMAIN_MAX_LENGTH)`. */
export const DNS1123_SUBDOMAIN = new RegExp(`^${DNS1123_SUBDOMAIN_FMT}$`);

/** A namespace-like name: at most 63 lowercase alphanumerics or '-', alphanumeric at both ends. */
export function isDns1123Label(value: string): boolean {
  return value.length <= DNS1123_LABEL_MAX_LENGTH && DNS1123_LABEL.test(value);
}

/** An object name: dot-separated DNS-1123 labels, at most 253 characters in all. */
export function isDns1123Subdomain(value: string): boolean {
  return value.length <= DNS1123_SUBDOMAIN_MAX_LENGTH && DNS1123_SUBDOMAIN.test(value);
}
