// Proves deploy/prometheus/alerts.yaml is valid and tested: `promtool check rules` accepts it,
// `promtool test rules` passes alerts.test.yaml, every alert has a `for:` duration, a severity,
// a summary and a description, and the unit tests hold, for every alert, a case where it fires
// and one where it stays silent. promtool comes from Debian's `prometheus` package (.ci/run).
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import * as path from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { workspaceRoot } from './support/service-process';

const run = promisify(execFile);
const rulesPath = path.join(workspaceRoot, 'deploy/prometheus/alerts.yaml');
const rulesTestPath = path.join(workspaceRoot, 'deploy/prometheus/alerts.test.yaml');

interface AlertRule {
  alert: string;
  expr: string;
  for?: string;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
}
interface RulesFile {
  groups: Array<{ name: string; rules: AlertRule[] }>;
}
interface RulesTestFile {
  tests: Array<{
    alert_rule_test?: Array<{ alertname: string; exp_alerts?: unknown[] }>;
  }>;
}

async function promtool(...args: string[]): Promise<string> {
  try {
    const { stdout, stderr } = await run('promtool', args, { timeout: 30_000 });
    return stdout + stderr;
  } catch (error) {
    const failed = error as { code?: unknown; stdout?: string; stderr?: string };
    if (failed.code === 'ENOENT') {
      throw new Error('promtool is not installed: apt-get install prometheus (see .ci/run)');
    }
    throw new Error(`promtool ${args.join(' ')} failed:\n${failed.stdout}${failed.stderr}`);
  }
}

const rules = parse(readFileSync(rulesPath, 'utf8')) as RulesFile;
const alerts = rules.groups.flatMap((group) => group.rules);

describe('Prometheus alert rules', () => {
  it('pass promtool check rules', async () => {
    expect(await promtool('check', 'rules', rulesPath)).toContain(
      `SUCCESS: ${alerts.length} rules found`,
    );
  });

  it('pass their promtool unit tests', async () => {
    expect(await promtool('test', 'rules', rulesTestPath)).toContain('SUCCESS');
  });

  it('cover what the issue asks for, each with for:, severity, summary and description', () => {
    const names = alerts.map((rule) => rule.alert);
    for (const metric of [
      'spool_under_replicated_partitions',
      'spool_offline_partitions',
      'spool_controller_active',
      'spool_under_min_isr_partitions',
      'spool_disk_free_bytes',
      'spool_consumer_group_lag_sum',
      'up',
    ]) {
      expect(
        alerts.some((rule) => new RegExp(`\\b${metric}\\b`).test(rule.expr)),
        metric,
      ).toBe(true);
    }
    expect(new Set(names).size).toBe(names.length);
    for (const rule of alerts) {
      expect(rule.for, rule.alert).toMatch(/^\d+[smh]$/);
      expect(['warning', 'critical'], rule.alert).toContain(rule.labels?.severity);
      expect(rule.annotations?.summary?.length ?? 0, rule.alert).toBeGreaterThan(10);
      expect(rule.annotations?.description?.length ?? 0, rule.alert).toBeGreaterThan(80);
    }
  });

  it('have unit tests where each alert fires and where it stays silent', () => {
    const tests = (parse(readFileSync(rulesTestPath, 'utf8')) as RulesTestFile).tests;
    const cases = tests.flatMap((test) => test.alert_rule_test ?? []);
    for (const rule of alerts) {
      const own = cases.filter((entry) => entry.alertname === rule.alert);
      expect(
        own.some((entry) => (entry.exp_alerts ?? []).length > 0),
        `${rule.alert} fires`,
      ).toBe(true);
      expect(
        own.some((entry) => (entry.exp_alerts ?? []).length === 0),
        `${rule.alert} silent`,
      ).toBe(true);
    }
  });
});
