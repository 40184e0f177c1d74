// A process's TLS material: its private key, its certificate chain and the CA bundle it trusts,
// read from PEM files, checked, and read again when the files change, so a rotated certificate
// (cert-manager, a Kubernetes Secret update, `spool dev --secure` reissuing) is used by new
// connections without a restart. Connections already open keep the certificate they began with,
// as in Kafka's dynamic ssl.keystore update.
//
// Reloading, every reloadIntervalMs:
// 1. Stat the files (stat follows symbolic links, so a Secret volume's `..data` swap is seen).
//    Nothing changed since the last attempt: done.
// 2. Read and check all of them together (checkTlsMaterial): each parses, the key matches the
//    leaf certificate, node's TLS accepts the set. A rotation that writes the certificate and
//    the key one after the other is seen halfway as a mismatch: refused, and the next tick sees
//    both.
// 3. Refused: logged once per change of the files, with the file and the reason; the material
//    in use stays. Accepted: it replaces the material and every listener is told (the gRPC
//    server's credentials, the data port's secure context).
// The first load is stricter: a failure is a TlsMaterialError naming the file, and the process
// does not start.
import { createPrivateKey, X509Certificate, type KeyObject } from 'node:crypto';
import { readFileSync, statSync, promises as fs } from 'node:fs';
import * as tls from 'node:tls';
import { SpoolError } from '../errors';
import type { Logger } from '../logger';

/** Reading the files every 5 s costs three stats; a rotation is seen within that. */
export const sslReloadIntervalMsDefault = 5_000;

/** The files, named as librdkafka names the settings (ssl.certificate.location, ...). */
export interface TlsFiles {
  /** PEM certificate chain: this process's certificate first, then its intermediates. */
  readonly certificateFile?: string;
  /** PEM private key (PKCS#8 or the key's own format), unencrypted. */
  readonly keyFile?: string;
  /** PEM bundle of the CAs this process trusts for its peers; empty means the system's. */
  readonly caFile?: string;
}

/** One consistent read of the files. */
export interface TlsMaterialSnapshot {
  readonly certificateChainPem?: Buffer;
  readonly keyPem?: Buffer;
  readonly caPem?: Buffer;
  /** The first certificate of the chain: whose identity this process presents. */
  readonly certificate?: X509Certificate;
  readonly secureContext: tls.SecureContext;
}

/** TLS_MATERIAL_INVALID: the message names the file and what is wrong with it. */
export class TlsMaterialError extends SpoolError {
  constructor(
    readonly file: string,
    problem: string,
    cause?: unknown,
  ) {
    super('TLS_MATERIAL_INVALID', `TLS file ${file}: ${problem}`, { cause, retriable: false });
    this.name = 'TlsMaterialError';
  }
}

export type TlsMaterialListener = (snapshot: TlsMaterialSnapshot) => void;

export class TlsMaterial {
  private snapshotInUse: TlsMaterialSnapshot;
  private readonly listeners = new Set<TlsMaterialListener>();
  private filesSeen: string;
  private readonly timer: NodeJS.Timeout | undefined;
  private checking = false;

  private constructor(
    readonly files: TlsFiles,
    private readonly logger: Logger | undefined,
    reloadIntervalMs: number,
  ) {
    this.snapshotInUse = checkTlsMaterial(files);
    this.filesSeen = fileVersionsSync(files);
    if (reloadIntervalMs > 0) {
      this.timer = setInterval(() => void this.checkForChange(), reloadIntervalMs);
      this.timer.unref();
    }
  }

  /**
   * Reads and checks the files; throws TlsMaterialError naming the first bad one. With a
   * reloadIntervalMs above 0, the files are watched until close().
   */
  static load(
    files: TlsFiles,
    options: { readonly logger?: Logger; readonly reloadIntervalMs?: number } = {},
  ): TlsMaterial {
    const reloadIntervalMs = options.reloadIntervalMs ?? sslReloadIntervalMsDefault;
    if (!Number.isSafeInteger(reloadIntervalMs) || reloadIntervalMs < 0) {
      throw new RangeError(
        `reloadIntervalMs must be a non-negative integer, got ${reloadIntervalMs}`,
      );
    }
    return new TlsMaterial(files, options.logger, reloadIntervalMs);
  }

  get current(): TlsMaterialSnapshot {
    return this.snapshotInUse;
  }

  /** Told of every accepted reload; returns the function that stops telling it. */
  onChange(listener: TlsMaterialListener): () => void {
    this.listeners.add(listener);
    return () => void this.listeners.delete(listener);
  }

  close(): void {
    if (this.timer !== undefined) clearInterval(this.timer);
    this.listeners.clear();
  }

  /** Steps 1-3 of the header; exposed for tests that do not want to wait for the timer. */
  async checkForChange(): Promise<'unchanged' | 'reloaded' | 'refused'> {
    if (this.checking) return 'unchanged';
    this.checking = true;
    try {
      const versions = await fileVersions(this.files);
      if (versions === this.filesSeen) return 'unchanged';
      this.filesSeen = versions;
      let snapshot: TlsMaterialSnapshot;
      try {
        snapshot = checkTlsMaterial(this.files);
      } catch (error) {
        this.logger?.error(
          { err: error, event: 'tls-reload-refused' },
          `TLS material not reloaded, the one in use stays: ${(error as Error).message}`,
        );
        return 'refused';
      }
      this.snapshotInUse = snapshot;
      this.logger?.info(
        {
          event: 'tls-reloaded',
          subject: snapshot.certificate?.subject.replace(/\n/g, ', '),
          validTo: snapshot.certificate?.validTo,
        },
        'TLS material reloaded; new connections use it',
      );
      for (const listener of this.listeners) listener(snapshot);
      return 'reloaded';
    } finally {
      this.checking = false;
    }
  }
}

/** Reads the files and checks them as one set; throws TlsMaterialError naming the bad file. */
export function checkTlsMaterial(files: TlsFiles): TlsMaterialSnapshot {
  if ((files.certificateFile === undefined) !== (files.keyFile === undefined)) {
    const missing = files.certificateFile === undefined ? 'certificate' : 'key';
    throw new TlsMaterialError(
      (files.certificateFile ?? files.keyFile) as string,
      `a ${missing} file must go with it (ssl.certificate.location and ssl.key.location are a pair)`,
    );
  }
  let certificate: X509Certificate | undefined;
  let certificateChainPem: Buffer | undefined;
  let keyPem: Buffer | undefined;
  if (files.certificateFile !== undefined && files.keyFile !== undefined) {
    certificateChainPem = readPem(files.certificateFile, 'CERTIFICATE');
    certificate = parseCertificates(files.certificateFile, certificateChainPem)[0];
    keyPem = readPem(files.keyFile, 'PRIVATE KEY');
    const key = parseKey(files.keyFile, keyPem);
    if (certificate !== undefined && !certificate.checkPrivateKey(key)) {
      throw new TlsMaterialError(
        files.keyFile,
        `the key does not belong to the certificate in ${files.certificateFile}`,
      );
    }
  }
  let caPem: Buffer | undefined;
  if (files.caFile !== undefined) {
    caPem = readPem(files.caFile, 'CERTIFICATE');
    parseCertificates(files.caFile, caPem);
  }
  let secureContext: tls.SecureContext;
  try {
    secureContext = tls.createSecureContext({
      ...(certificateChainPem === undefined ? {} : { cert: certificateChainPem, key: keyPem }),
      ...(caPem === undefined ? {} : { ca: caPem }),
      minVersion: 'TLSv1.2',
    });
  } catch (error) {
    throw new TlsMaterialError(
      files.certificateFile ?? files.caFile ?? '(none)',
      `TLS refuses the set: ${(error as Error).message}`,
      error,
    );
  }
  return {
    ...(certificateChainPem === undefined ? {} : { certificateChainPem }),
    ...(keyPem === undefined ? {} : { keyPem }),
    ...(caPem === undefined ? {} : { caPem }),
    ...(certificate === undefined ? {} : { certificate }),
    secureContext,
  };
}

function readPem(file: string, label: string): Buffer {
  let content: Buffer;
  try {
    content = readFileSync(file);
  } catch (error) {
    const reason = (error as NodeJS.ErrnoException).code ?? (error as Error).message;
    throw new TlsMaterialError(file, `cannot be read (${reason})`, error);
  }
  if (!content.includes(`-----BEGIN `) || !content.toString('latin1').includes(label)) {
    throw new TlsMaterialError(file, `holds no PEM block of type ${label}`);
  }
  return content;
}

function parseCertificates(file: string, pem: Buffer): X509Certificate[] {
  const blocks = pem
    .toString('latin1')
    .match(/-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g);
  if (blocks === null) throw new TlsMaterialError(file, 'holds no PEM CERTIFICATE block');
  return blocks.map((block, index) => {
    try {
      return new X509Certificate(block);
    } catch (error) {
      throw new TlsMaterialError(
        file,
        `certificate ${index + 1} is not a valid X.509 certificate (${(error as Error).message})`,
        error,
      );
    }
  });
}

function parseKey(file: string, pem: Buffer): KeyObject {
  try {
    return createPrivateKey(pem);
  } catch (error) {
    throw new TlsMaterialError(
      file,
      `is not an unencrypted PEM private key (${(error as Error).message})`,
      error,
    );
  }
}

function filesOf(files: TlsFiles): string[] {
  return [files.certificateFile, files.keyFile, files.caFile].filter(
    (file): file is string => file !== undefined,
  );
}

function versionOf(stat: { ino: number; size: number; mtimeMs: number } | undefined): string {
  return stat === undefined ? 'missing' : `${stat.ino}:${stat.size}:${stat.mtimeMs}`;
}

function fileVersionsSync(files: TlsFiles): string {
  return filesOf(files)
    .map((file) => {
      try {
        return versionOf(statSync(file));
      } catch {
        return versionOf(undefined);
      }
    })
    .join('|');
}

async function fileVersions(files: TlsFiles): Promise<string> {
  const versions = await Promise.all(
    filesOf(files).map((file) => fs.stat(file).then(versionOf, () => versionOf(undefined))),
  );
  return versions.join('|');
}
