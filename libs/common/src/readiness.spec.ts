// Proves readiness follows its conditions and turns false for good once shutdown begins.
import { describe, expect, it } from 'vitest';
import { Readiness } from './readiness';

describe('Readiness', () => {
  it('is ready only when every condition is met and never again after shutdown begins', () => {
    const readiness = new Readiness();
    const changes: boolean[] = [];
    readiness.onChange((ready) => changes.push(ready));
    readiness.require('logs');
    readiness.require('metadata');
    expect(readiness.isReady()).toBe(false);
    expect(readiness.reasons()).toEqual(['waiting for logs', 'waiting for metadata']);
    readiness.satisfy('logs');
    readiness.satisfy('metadata');
    expect(readiness.isReady()).toBe(true);
    readiness.beginShutdown();
    readiness.satisfy('logs');
    expect(readiness.isReady()).toBe(false);
    expect(changes.at(-1)).toBe(false);
  });
});
