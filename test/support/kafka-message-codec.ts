import { execFileSync, spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import * as path from 'node:path';
import { createInterface } from 'node:readline';

const repositoryRoot = path.resolve(__dirname, '..', '..');

/** What Kafka's own serializers answered for one command: the payload, or the error they threw. */
export type CodecAnswer = { ok: true; payload: string } | { ok: false; error: string };

/**
 * Kafka's own serializers (test/support/kafka-message-codec/KafkaMessageCodec.java, run on the
 * pinned kafka-clients jar) as one long-lived JVM: commands go in as lines and answers come back
 * in order, so a batch of thousands costs one process start.
 */
export class KafkaMessageCodec {
  private readonly process: ChildProcessWithoutNullStreams;
  private readonly waiting: ((answer: CodecAnswer) => void)[] = [];
  private readonly exited: Promise<number | null>;
  private stderr = '';

  private constructor(classpath: string) {
    this.process = spawn('java', ['-Xshare:auto', '-cp', classpath, 'KafkaMessageCodec'], {
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    this.process.stderr.on('data', (chunk: Buffer) => {
      this.stderr = (this.stderr + chunk.toString()).slice(-4000);
    });
    createInterface({ input: this.process.stdout }).on('line', (line) => {
      const resolve = this.waiting.shift();
      if (resolve === undefined) return;
      resolve(
        line.startsWith('ok ')
          ? { ok: true, payload: line.slice(3) }
          : { ok: false, error: line.replace(/^error /, '') },
      );
    });
    this.exited = new Promise((resolve) => this.process.on('exit', (code) => resolve(code)));
    void this.exited.then((code) => {
      for (const resolve of this.waiting.splice(0)) {
        resolve({ ok: false, error: `the JVM exited (${code}): ${this.stderr}` });
      }
    });
  }

  /** Compiles the program if needed (ensure-kafka-message-codec.sh) and starts it. */
  static start(): KafkaMessageCodec {
    const classpath = execFileSync(
      'bash',
      [path.join(repositoryRoot, 'test/support/ensure-kafka-message-codec.sh')],
      { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'], timeout: 600_000 },
    ).trim();
    return new KafkaMessageCodec(classpath);
  }

  /** The bytes Kafka writes for a message given in its JSON form. */
  encode(messageName: string, version: number, json: string): Promise<CodecAnswer> {
    return this.send(`encode ${messageName} ${version} ${json}`);
  }

  /** Kafka's JSON of the message it reads from `bytes`. */
  decode(messageName: string, version: number, bytes: Buffer): Promise<CodecAnswer> {
    return this.send(`decode ${messageName} ${version} ${bytes.toString('hex') || '-'}`);
  }

  private send(line: string): Promise<CodecAnswer> {
    return new Promise((resolve) => {
      this.waiting.push(resolve);
      this.process.stdin.write(`${line}\n`);
    });
  }

  /** Ends the JVM (its input closes, it exits) and waits for it. */
  async stop(): Promise<void> {
    this.process.stdin.end();
    const timer = setTimeout(() => this.process.kill('SIGKILL'), 10_000);
    await this.exited;
    clearTimeout(timer);
  }
}
