import { boundaryOf, isMultipartError, parseMultipart } from './multipart';

const body = (boundary: string, parts: { name: string; filename?: string; data: string }[]): Buffer =>
  Buffer.from(
    parts
      .map(
        (p) =>
          `--${boundary}\r\nContent-Disposition: form-data; name="${p.name}"${p.filename !== undefined ? `; filename="${p.filename}"` : ''}\r\nContent-Type: application/octet-stream\r\n\r\n${p.data}\r\n`,
      )
      .join('') + `--${boundary}--\r\n`,
  );

describe('multipart file writes', () => {
  it('takes each part named file, its filename the destination', () => {
    const b = 'form-boundary-123';
    const parts = parseMultipart(
      body(b, [
        { name: 'file', filename: '/home/user/a.txt', data: 'alpha\r\nwith a line end' },
        { name: 'other', data: 'ignored' },
        { name: 'file', filename: '/home/user/dir/b c.bin', data: '' },
      ]),
      boundaryOf(`multipart/form-data; boundary=${b}`),
      { maxParts: 10 },
    );
    expect(parts.map((p) => [p.filename, p.data.toString()])).toEqual([
      ['/home/user/a.txt', 'alpha\r\nwith a line end'],
      ['/home/user/dir/b c.bin', ''],
    ]);
  });

  it.each([
    ['no boundary', () => boundaryOf('multipart/form-data'), 'without a boundary'],
    ['not multipart', () => boundaryOf('application/json'), 'not multipart/form-data'],
    ['no file part', () => parseMultipart(body('b', [{ name: 'x', data: '1' }]), 'b', { maxParts: 1 }), 'no part named file'],
    [
      'too many',
      () =>
        parseMultipart(
          body('b', [
            { name: 'file', filename: '/a', data: '' },
            { name: 'file', filename: '/b', data: '' },
          ]),
          'b',
          { maxParts: 1 },
        ),
      'more than 1 files',
    ],
    [
      'unclosed',
      () =>
        parseMultipart(Buffer.from('--b\r\nContent-Disposition: form-data; name="file"; filename="/a"\r\n\r\nabc'), 'b', { maxParts: 1 }),
      'not closed',
    ],
    ['no filename', () => parseMultipart(body('b', [{ name: 'file', data: 'x' }]), 'b', { maxParts: 1 }), 'has no filename'],
  ])('refuses %s', (_what, f, message) => {
    let err: unknown;
    try {
      f();
    } catch (e) {
      err = e;
    }
    expect(isMultipartError(err)).toBe(true);
    expect((err as Error).message).toContain(message);
  });
});
