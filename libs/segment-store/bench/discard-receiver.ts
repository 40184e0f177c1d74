// The far end of the transfer measurement: a TCP server on 127.0.0.1 that reads and discards,
// in a child process, so that the CPU it spends receiving is not counted as the sender's
// (process.cpuUsage covers this process only). The child exits when its stdin closes, so it
// cannot outlive the benchmark even when the benchmark is killed.
import { spawn, type ChildProcess } from 'node:child_process';
import { SegmentStoreBenchError } from './bench-error';

/** Longest wait for the child to report its port. */
const receiverStartMsMax = 10_000;

const receiverScript = `
const net = require('node:net');
const server = net.createServer((socket) => {
  socket.on('data', () => {});
  socket.on('error', () => {});
});
server.listen(0, '127.0.0.1', () => process.stdout.write(server.address().port + '\\n'));
process.stdin.on('end', () => process.exit(0));
process.stdin.on('error', () => process.exit(0));
process.stdin.resume();
`;

export interface DiscardReceiver {
  readonly port: number;
  stop(): void;
}

export function startDiscardReceiver(): Promise<DiscardReceiver> {
  const child = spawn(process.execPath, ['-e', receiverScript], {
    stdio: ['pipe', 'pipe', 'inherit'],
  });
  return new Promise((resolve, reject) => {
    let output = '';
    const fail = (reason: string): void => {
      clearTimeout(timer);
      stopChild(child);
      reject(new SegmentStoreBenchError(`the discard receiver ${reason}`));
    };
    const timer = setTimeout(
      () => fail(`sent no port in ${receiverStartMsMax} ms`),
      receiverStartMsMax,
    );
    child.once('error', (error) => fail(`did not start: ${error.message}`));
    child.once('exit', (code) => fail(`exited with code ${code} before it listened`));
    child.stdout!.on('data', (chunk: Buffer) => {
      output += chunk.toString('utf8');
      const newline = output.indexOf('\n');
      if (newline < 0) return;
      clearTimeout(timer);
      child.removeAllListeners('exit');
      const port = Number(output.slice(0, newline));
      resolve({ port, stop: () => stopChild(child) });
    });
  });
}

function stopChild(child: ChildProcess): void {
  child.stdin?.end();
  if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
}
