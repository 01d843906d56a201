/**
 * The `multipart/form-data` body of envd's `POST /files`, as e2b's SDKs write it: one or more
 * parts named `file`, each part's filename the destination path (the `path` query parameter is
 * absent on multi-file writes). The body is read whole, under the caller's size limit, before
 * it is split here.
 */

export interface FilePart {
  /** The part's filename: where the file goes. */
  filename: string;
  data: Buffer;
}

export class MultipartError extends Error {
  override readonly name = 'MultipartError';
}

export function isMultipartError(err: unknown): err is MultipartError {
  return err instanceof MultipartError;
}

/** The boundary of a `multipart/form-data; boundary=…` content type. */
export function boundaryOf(contentType: string | undefined): string {
  const m = /^multipart\/form-data\s*(?:;(.*))?$/i.exec(contentType ?? '');
  if (!m) throw new MultipartError('the body is not multipart/form-data');
  const b = /(?:^|;)\s*boundary=(?:"([^"]{1,70})"|([^\s;"]{1,70}))/i.exec(m[1] ?? '');
  const boundary = b?.[1] ?? b?.[2];
  if (!boundary) throw new MultipartError('multipart/form-data without a boundary');
  return boundary;
}

const CRLF = Buffer.from('\r\n');
const HEADERS_END = Buffer.from('\r\n\r\n');

/** A header parameter (`filename="a b"`, `name=file`), quotes and backslash escapes undone. */
function parameter(header: string, name: string): string | undefined {
  const re = new RegExp(`(?:^|;)\\s*${name}=(?:"((?:[^"\\\\]|\\\\.)*)"|([^;\\s]*))`, 'i');
  const m = re.exec(header);
  if (!m) return undefined;
  return m[1] !== undefined ? m[1].replace(/\\(.)/g, '$1') : m[2];
}

export function parseMultipart(body: Buffer, boundary: string, o: { maxParts: number }): FilePart[] {
  const delimiter = Buffer.from(`--${boundary}`);
  const parts: FilePart[] = [];
  let at = body.indexOf(delimiter);
  if (at < 0) throw new MultipartError('the body holds no part');
  for (;;) {
    at += delimiter.length;
    // `--` after a delimiter closes the body
    if (body[at] === 0x2d && body[at + 1] === 0x2d) break;
    if (!body.subarray(at, at + 2).equals(CRLF)) throw new MultipartError('a part delimiter is not followed by a line end');
    const headersEnd = body.indexOf(HEADERS_END, at + 2);
    if (headersEnd < 0) throw new MultipartError('a part has no end to its headers');
    const headers = body
      .subarray(at + 2, headersEnd)
      .toString('utf8')
      .split('\r\n');
    const next = body.indexOf(Buffer.concat([CRLF, delimiter]), headersEnd + 4);
    if (next < 0) throw new MultipartError('a part is not closed by the boundary');
    const disposition = headers.find((h) => /^content-disposition\s*:/i.test(h))?.replace(/^[^:]*:/, '') ?? '';
    const name = parameter(disposition, 'name');
    const filename = parameter(disposition, 'filename');
    if (name === 'file') {
      if (!filename) throw new MultipartError('a file part has no filename (the path it is written to)');
      if (parts.length >= o.maxParts) throw new MultipartError(`more than ${o.maxParts} files in one write`);
      parts.push({ filename, data: body.subarray(headersEnd + 4, next) });
    }
    at = next + CRLF.length;
  }
  if (parts.length === 0) throw new MultipartError('no part named file');
  return parts;
}
