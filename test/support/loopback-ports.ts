// Loopback ports a test must choose before the process that listens on them starts (a chart's
// fixed container ports, say). A port found by binding port 0 comes from the kernel's ephemeral
// range, where any outgoing connection of any test running alongside may take it as its local
// port before the service binds it; that race failed CI once. So these come from below (or
// above) the ephemeral range, where nothing takes a port unless it asks for that port.
import { readFileSync } from 'node:fs';
import * as net from 'node:net';

const handedOut = new Set<number>();

/** [low, high] of net.ipv4.ip_local_port_range, or Linux's default when it cannot be read. */
function ephemeralRange(): [number, number] {
  try {
    const [low, high] = readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8')
      .trim()
      .split(/\s+/)
      .map(Number);
    if (Number.isInteger(low) && Number.isInteger(high)) return [low!, high!];
  } catch {
    // Not Linux: fall through to the default.
  }
  return [32768, 60999];
}

function canBind(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const probe = net.createServer();
    probe.once('error', () => resolve(false));
    probe.listen(port, '127.0.0.1', () => probe.close(() => resolve(true)));
  });
}

/** A free 127.0.0.1 port outside the ephemeral range, never the same one twice per process. */
export async function reservedLoopbackPort(): Promise<number> {
  const [ephemeralLow, ephemeralHigh] = ephemeralRange();
  const [low, high] =
    ephemeralLow - 10_000 >= 2_000 ? [10_000, ephemeralLow - 1] : [ephemeralHigh + 1, 65_535];
  const size = high - low + 1;
  const start = Math.floor(Math.random() * size);
  for (let step = 0; step < size && step < 2_000; step++) {
    const port = low + ((start + step) % size);
    if (handedOut.has(port)) continue;
    if (await canBind(port)) {
      handedOut.add(port);
      return port;
    }
  }
  throw new Error(`no free loopback port in ${low}-${high}`);
}
