// How far a transfer got, as far as its failure handling needs to know.

export interface TransferProgress {
  /**
   * Set right before the first byte of the slice may reach the socket. After that, a failed
   * transfer leaves the peer with part of a response and no way to find where the next starts.
   */
  started: boolean;
}
