import { ApiException } from '@kubernetes/client-node';
import { apiStatusOf, ignoreNotFound, isAlreadyExists, isConflict, isGone, isNotFound } from './api-errors';

const status = (code: number, reason: string): ApiException<string> =>
  new ApiException(
    code,
    `HTTP ${code}`,
    JSON.stringify({ kind: 'Status', status: 'Failure', code, reason, message: `${reason} happened` }),
    {},
  );

describe('API error predicates', () => {
  it('reads the Status reason from the raw body', () => {
    expect(apiStatusOf(status(409, 'AlreadyExists'))).toEqual({ code: 409, reason: 'AlreadyExists', message: 'AlreadyExists happened' });
  });
  it('tells AlreadyExists from Conflict', () => {
    expect(isAlreadyExists(status(409, 'AlreadyExists'))).toBe(true);
    expect(isConflict(status(409, 'AlreadyExists'))).toBe(false);
    expect(isConflict(status(409, 'Conflict'))).toBe(true);
    expect(isAlreadyExists(status(409, 'Conflict'))).toBe(false);
  });
  it('handles non-JSON bodies and non-API errors', () => {
    expect(isNotFound(new ApiException(404, 'x', '<html>', {}))).toBe(true);
    expect(isNotFound(new Error('404'))).toBe(false);
    expect(isGone(Object.assign(new Error('Gone'), { statusCode: 410 }))).toBe(true);
    expect(apiStatusOf('nope')).toBeUndefined();
  });
  it('ignoreNotFound maps 404 to undefined and rethrows the rest', async () => {
    await expect(ignoreNotFound(Promise.reject(status(404, 'NotFound')))).resolves.toBeUndefined();
    await expect(ignoreNotFound(Promise.resolve(1))).resolves.toBe(1);
    await expect(ignoreNotFound(Promise.reject(status(500, 'InternalError')))).rejects.toBeInstanceOf(ApiException);
  });
});
