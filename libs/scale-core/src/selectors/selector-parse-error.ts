import { BadRequestError } from '../errors/status-errors';

/**
 * A label or field selector that does not parse. A 400 BadRequest at the HTTP layer; the
 * message quotes the selector and says at which character (0-based) the syntax broke.
 */
export class SelectorParseError extends BadRequestError {
  readonly selector: string;
  readonly position: number;
  readonly detail: string;
  constructor(kind: 'label' | 'field', selector: string, position: number, detail: string) {
    super(`invalid ${kind} selector ${JSON.stringify(selector)}: ${detail} (at position ${position})`);
    this.selector = selector;
    this.position = position;
    this.detail = detail;
  }
}
