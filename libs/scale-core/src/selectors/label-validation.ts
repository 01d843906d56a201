import { DNS1123_SUBDOMAIN, DNS1123_SUBDOMAIN_FMT, DNS1123_SUBDOMAIN_MAX_LENGTH } from '../names/dns1123';

/** Label key and value rules of apimachinery's validation.IsQualifiedName / IsValidLabelValue. */

const NAME_FMT = '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]';
const NAME_RE = new RegExp(`^${NAME_FMT}$`);
const VALUE_RE = new RegExp(`^(${NAME_FMT})?$`);

const NAME_MAX = 63;

const NAME_MSG = `name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName', or 'my.name', or '123-abc', regex used for validation is '${NAME_FMT}')`;
const PREFIX_MSG = `prefix part a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '${DNS1123_SUBDOMAIN_FMT}')`;

/** Problems with a label key (`[prefix/]name`); empty when it is valid. */
export function validateLabelKey(key: string): string[] {
  const parts = key.split('/');
  let name: string;
  const errs: string[] = [];
  if (parts.length === 1) {
    name = parts[0] ?? '';
  } else if (parts.length === 2) {
    const prefix = parts[0] ?? '';
    name = parts[1] ?? '';
    if (prefix.length === 0) errs.push('prefix part must be non-empty');
    else if (prefix.length > DNS1123_SUBDOMAIN_MAX_LENGTH)
      errs.push(`prefix part must be no more than ${DNS1123_SUBDOMAIN_MAX_LENGTH} characters`);
    else if (!DNS1123_SUBDOMAIN.test(prefix)) errs.push(PREFIX_MSG);
  } else {
    return [
      `a qualified name must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character, with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')`,
    ];
  }
  if (name.length === 0) errs.push('name part must be non-empty');
  else if (name.length > NAME_MAX) errs.push(`name part must be no more than ${NAME_MAX} characters`);
  else if (!NAME_RE.test(name)) errs.push(NAME_MSG);
  return errs;
}

/** Problems with a label value (may be empty); empty when it is valid. */
export function validateLabelValue(value: string): string[] {
  const errs: string[] = [];
  if (value.length > NAME_MAX) errs.push(`must be no more than ${NAME_MAX} characters`);
  if (!VALUE_RE.test(value)) {
    errs.push(
      `a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue', or 'my_value', or '12345', regex used for validation is '(${NAME_FMT})?')`,
    );
  }
  return errs;
}
