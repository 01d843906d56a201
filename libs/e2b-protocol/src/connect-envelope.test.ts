import { endStreamEnvelope, EnvelopeReader, FLAG_END_STREAM, FLAG_MESSAGE, isEnvelopeError, messageEnvelope } from './connect-envelope';

describe('Connect envelopes', () => {
  it('frames a message as flag, big-endian length and JSON, and an end-stream with its error', () => {
    const m = messageEnvelope({ event: { start: { pid: 7 } } });
    expect([...m.subarray(0, 5)]).toEqual([0, 0, 0, 0, 29]);
    expect(m.subarray(5).toString()).toBe('{"event":{"start":{"pid":7}}}');
    expect(endStreamEnvelope().toString('latin1')).toBe('\x02\x00\x00\x00\x02{}');
    expect(endStreamEnvelope({ code: 'not_found', message: 'no process 9' }).subarray(5).toString()).toBe(
      '{"error":{"code":"not_found","message":"no process 9"}}',
    );
  });

  it('reads envelopes cut anywhere across chunks, as a chunked body delivers them', () => {
    const bytes = Buffer.concat([messageEnvelope({ a: 1 }), messageEnvelope({ b: 'two' }), endStreamEnvelope()]);
    for (let cut = 0; cut <= bytes.length; cut++) {
      const r = new EnvelopeReader(1024);
      const got = [...r.push(bytes.subarray(0, cut)), ...r.push(bytes.subarray(cut))];
      expect(got.map((e) => [e.flags, e.data.toString()])).toEqual([
        [FLAG_MESSAGE, '{"a":1}'],
        [FLAG_MESSAGE, '{"b":"two"}'],
        [FLAG_END_STREAM, '{}'],
      ]);
      expect(r.partial).toBe(0);
    }
  });

  it('refuses a length over the limit before buffering it, and compressed messages', () => {
    const r = new EnvelopeReader(16);
    const big = Buffer.from([0, 0xff, 0xff, 0xff, 0xff]);
    let err: unknown;
    try {
      r.push(big);
    } catch (e) {
      err = e;
    }
    expect(isEnvelopeError(err)).toBe(true);
    expect(() => new EnvelopeReader(16).push(Buffer.from([1, 0, 0, 0, 2, 0x7b, 0x7d]))).toThrow('compressed messages are not accepted');
  });

  it('tells a stream cut short from a whole one', () => {
    const r = new EnvelopeReader(1024);
    r.push(messageEnvelope({ a: 1 }).subarray(0, 7));
    expect(r.partial).toBe(7);
  });
});
