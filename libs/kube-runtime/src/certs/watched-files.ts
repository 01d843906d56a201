import { createPrivateKey, X509Certificate } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import type { SecureContextOptions, Server as TlsServer } from 'node:tls';
import type { Logger } from '../log/logger';

/** How often mounted certificate files are read again: a renewed Secret reaches the pod within the kubelet's sync, then within this. */
export const CERT_POLL_MS = 10_000;

export interface WatchedFilesOptions<K extends string> {
  /** Whether a set read together may replace the current one (a key that matches its certificate). */
  valid?: (contents: Readonly<Record<K, string>>) => boolean;
  pollMs?: number;
  log: Logger;
}

/**
 * Files read together, such as a certificate and its key or a CA bundle, and read again every
 * `pollMs`. A Secret volume changes its files at once by swapping its `..data` link, so a pass
 * reads the old set or the new one; a set that does not pass `valid` (a certificate read before
 * its key was swapped, on a volume that is not a Secret's) is skipped and read again next pass.
 * Listeners hear each change once, in order.
 */
export class WatchedFiles<K extends string> {
  #current: Readonly<Record<K, string>>;
  readonly #listeners = new Set<(contents: Readonly<Record<K, string>>) => void>();
  readonly #timer: NodeJS.Timeout;
  #reading = false;

  private constructor(
    private readonly files: Readonly<Record<K, string>>,
    initial: Readonly<Record<K, string>>,
    private readonly o: WatchedFilesOptions<K>,
  ) {
    this.#current = initial;
    this.#timer = setInterval(() => void this.check(), o.pollMs ?? CERT_POLL_MS);
    // a reload never keeps the process alive on its own
    this.#timer.unref();
  }

  /** Reads the files now (they must be there and valid), then keeps reading them. */
  static async open<K extends string>(files: Readonly<Record<K, string>>, o: WatchedFilesOptions<K>): Promise<WatchedFiles<K>> {
    const initial = await readAll(files);
    if (o.valid && !o.valid(initial)) throw new Error(`${Object.values(files).join(' and ')} do not hold a usable set`);
    return new WatchedFiles(files, initial, o);
  }

  get current(): Readonly<Record<K, string>> {
    return this.#current;
  }

  /** Calls `fn` with each new set; returns a function that stops it. */
  onChange(fn: (contents: Readonly<Record<K, string>>) => void): () => void {
    this.#listeners.add(fn);
    return () => this.#listeners.delete(fn);
  }

  /** One pass now (the timer's, and a test's): resolves true when the set changed. */
  async check(): Promise<boolean> {
    if (this.#reading) return false;
    this.#reading = true;
    try {
      const next = await readAll(this.files).catch((err: unknown) => {
        this.o.log.debug({ err, files: this.files }, 'mounted files unreadable this pass; keeping the current ones');
        return undefined;
      });
      if (next === undefined || sameContents(next, this.#current)) return false;
      if (this.o.valid && !this.o.valid(next)) {
        this.o.log.debug({ files: this.files }, 'mounted files changed but do not make a usable set yet');
        return false;
      }
      this.#current = next;
      this.o.log.info({ files: Object.values(this.files) }, 'mounted files changed: using the new ones');
      for (const fn of this.#listeners) fn(next);
      return true;
    } finally {
      this.#reading = false;
    }
  }

  close(): void {
    clearInterval(this.#timer);
    this.#listeners.clear();
  }
}

async function readAll<K extends string>(files: Readonly<Record<K, string>>): Promise<Record<K, string>> {
  const keys = Object.keys(files) as K[];
  const texts = await Promise.all(keys.map((k) => readFile(files[k], 'utf8')));
  return Object.fromEntries(keys.map((k, i) => [k, texts[i] ?? ''])) as Record<K, string>;
}

function sameContents<K extends string>(a: Readonly<Record<K, string>>, b: Readonly<Record<K, string>>): boolean {
  return (Object.keys(a) as K[]).every((k) => a[k] === b[k]);
}

/** A certificate and the key that belongs to it (both PEM). */
export function keyMatchesCert({ cert, key }: Readonly<Record<'cert' | 'key', string>>): boolean {
  try {
    return new X509Certificate(cert).checkPrivateKey(createPrivateKey(key));
  } catch {
    return false;
  }
}

/** Whether the text holds at least one certificate, every one of which parses. */
export function isCertBundle({ ca }: Readonly<Record<'ca', string>>): boolean {
  const blocks = ca.match(/-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g) ?? [];
  if (blocks.length === 0) return false;
  try {
    for (const b of blocks) new X509Certificate(b);
    return true;
  } catch {
    return false;
  }
}

/** A CA bundle from a file, read again when it changes (a rotation adds the new CA, later drops the old). */
export function watchCaFile(file: string, log: Logger, pollMs?: number): Promise<WatchedFiles<'ca'>> {
  return WatchedFiles.open({ ca: file }, { valid: isCertBundle, log, ...(pollMs !== undefined ? { pollMs } : {}) });
}

/**
 * Calls `trust` with the CA file's contents whenever they change, for as long as the process
 * runs (its timer never holds the process open). A file that cannot be read now keeps the CA the
 * caller read at start, and says so.
 */
export function followCaFile(file: string, log: Logger, trust: (pem: string) => void): void {
  watchCaFile(file, log).then(
    (ca) => ca.onChange(({ ca: pem }) => trust(pem)),
    (err: unknown) => log.warn({ err, file }, 'cannot follow the CA file; keeping the CA read at start'),
  );
}

/** A certificate and its key as a server serves them: the current pair, and each change. */
export interface ServingPair {
  readonly current: Readonly<Record<'cert' | 'key', string>>;
  onChange(fn: (pair: Readonly<Record<'cert' | 'key', string>>) => void): () => void;
  /** Stops reading for changes (the server closes). */
  close(): void;
}

/** A pair that never changes (one made at start, when no files are given). */
export function fixedPair(cert: string, key: string): ServingPair {
  return { current: { cert, key }, onChange: () => () => undefined, close: () => undefined };
}

/** A serving certificate and its key from files, read again when they change. */
export function watchServingFiles(certFile: string, keyFile: string, log: Logger, pollMs?: number): Promise<WatchedFiles<'cert' | 'key'>> {
  return WatchedFiles.open({ cert: certFile, key: keyFile }, { valid: keyMatchesCert, log, ...(pollMs !== undefined ? { pollMs } : {}) });
}

/**
 * Serves each new certificate: new connections get it, connections open keep the one they began
 * with. `extra` adds what else the context holds (the client CAs it accepts).
 */
export function serveWatched(server: TlsServer, pair: ServingPair, extra: () => SecureContextOptions = () => ({})): () => void {
  return pair.onChange(({ cert, key }) => server.setSecureContext({ ...extra(), cert, key }));
}
