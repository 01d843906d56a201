import { exitStatusOf } from './data-plane-commands';

describe('kubectl sandbox exec exit status', () => {
  it.each([
    [0, 0],
    [7, 7],
    [255, 255],
    // killed, or a code the node could not learn: a failure, never success
    [-1, 1],
    [256, 1],
    [1.5, 1],
  ])('exits %d as %d', (code, status) => {
    expect(exitStatusOf(code)).toBe(status);
  });
});
