import { dataEvent, endEvent, entryInfo, permissionString, StartRequestSchema, startEvent } from './index';

describe('envd messages', () => {
  it('reads the Start request commands.run sends', () => {
    const r = StartRequestSchema.parse({
      process: { cmd: '/bin/bash', args: ['-l', '-c', 'echo hi'], envs: { A: '1' }, cwd: '/work' },
      stdin: false,
    });
    expect(r.process).toEqual({ cmd: '/bin/bash', args: ['-l', '-c', 'echo hi'], envs: { A: '1' }, cwd: '/work' });
  });

  it('writes events in proto3 JSON: bytes as base64, defaults left out', () => {
    expect(startEvent(12)).toEqual({ event: { start: { pid: 12 } } });
    expect(dataEvent('stdout', Buffer.from('hi\n'))).toEqual({ event: { data: { stdout: 'aGkK' } } });
    expect(endEvent({ exitCode: 0, exited: true, status: 'exit status 0' })).toEqual({
      event: { end: { exited: true, status: 'exit status 0' } },
    });
    expect(endEvent({ exitCode: 3, exited: true, status: 'exit status 3' })).toEqual({
      event: { end: { exitCode: 3, exited: true, status: 'exit status 3' } },
    });
  });

  it('describes a file as EntryInfo', () => {
    expect(permissionString('dir', 0o755)).toBe('drwxr-xr-x');
    expect(
      entryInfo({ name: 'a.txt', path: '/home/user/a.txt', kind: 'file', size: 5, mode: 0o644, modifiedTime: '2026-12-07T00:00:00Z' }),
    ).toEqual({
      name: 'a.txt',
      type: 'FILE_TYPE_FILE',
      path: '/home/user/a.txt',
      size: '5',
      mode: 0o644,
      permissions: '-rw-r--r--',
      owner: 'user',
      group: 'user',
      modifiedTime: '2026-12-07T00:00:00Z',
    });
  });
});
