// The one error the benchmark throws for operating problems (a bad flag, a missing disk, a
// receiver that did not start): the entry point prints its message alone, without a stack.
export class SegmentStoreBenchError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'SegmentStoreBenchError';
  }
}
