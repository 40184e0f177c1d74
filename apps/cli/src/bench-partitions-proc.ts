import { readdirSync, readFileSync } from 'node:fs';
import { request } from 'node:http';

/**
 * What `spool bench partitions` reads of a running process, as `top`, `ps` and `ls /proc/<pid>/fd`
 * would: CPU time, resident memory and open descriptors from Linux's /proc, and a storage node's
 * Prometheus metrics from its /metrics endpoint.
 */

/** Linux's USER_HZ: the unit of utime and stime in /proc/<pid>/stat. */
const clockTicksPerSecond = 100;
/** How long one scrape of /metrics may take on a loaded machine. */
const metricsScrapeTimeoutMs = 10_000;

/** User plus system CPU seconds the process (every thread) has used since it started. */
export function cpuSeconds(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  // The command name (field 2) may hold spaces and parentheses; the fields after it do not.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  // After the name: state is field 3, so utime (field 14) and stime (15) are at 11 and 12.
  const userTicks = Number(fields[11]);
  const systemTicks = Number(fields[12]);
  if (!Number.isFinite(userTicks) || !Number.isFinite(systemTicks)) {
    throw new Error(`/proc/${pid}/stat has no CPU times: "${stat.slice(0, 200)}"`);
  }
  return (userTicks + systemTicks) / clockTicksPerSecond;
}

/** The process's resident set (VmRSS in /proc/<pid>/status), in bytes. */
export function residentBytes(pid: number): number {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const match = /^VmRSS:\s+(\d+) kB$/m.exec(status);
  if (match === null) throw new Error(`/proc/${pid}/status has no VmRSS line`);
  return Number(match[1]) * 1024;
}

/** How many descriptors the process holds open: the entries of /proc/<pid>/fd. */
export function openDescriptorCount(pid: number): number {
  return readdirSync(`/proc/${pid}/fd`).length;
}

/** True while a process with this pid exists (a zombie counts until it is reaped). */
export function processExists(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/**
 * The value of each named metric in a Prometheus text exposition, whatever its labels (every
 * Spool service adds `service`), summed over its series; a name the text lacks is absent.
 */
export function metricValues(text: string, names: readonly string[]): Map<string, number> {
  const values = new Map<string, number>();
  for (const line of text.split('\n')) {
    const match = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{[^}]*\})? (\S+)/.exec(line);
    if (match === null || !names.includes(match[1]!)) continue;
    values.set(match[1]!, (values.get(match[1]!) ?? 0) + Number(match[2]));
  }
  return values;
}

/** GET http://127.0.0.1:<port>/metrics as text. */
export function scrapeMetrics(port: number): Promise<string> {
  return new Promise((resolve, reject) => {
    const call = request(
      { host: '127.0.0.1', port, path: '/metrics', timeout: metricsScrapeTimeoutMs },
      (response) => {
        let body = '';
        response.setEncoding('utf8');
        response.on('data', (chunk: string) => (body += chunk));
        response.on('end', () =>
          response.statusCode === 200
            ? resolve(body)
            : reject(new Error(`GET 127.0.0.1:${port}/metrics answered ${response.statusCode}`)),
        );
        response.on('error', reject);
      },
    );
    call.on('timeout', () =>
      call.destroy(
        new Error(`GET 127.0.0.1:${port}/metrics took over ${metricsScrapeTimeoutMs} ms`),
      ),
    );
    call.on('error', reject);
    call.end();
  });
}
