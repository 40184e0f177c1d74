#!/usr/bin/env node
// Copies the alerting rules and Grafana dashboards into the chart: a chart reads only files
// inside itself (.Files.Get), so helm/spool/files/ holds copies of deploy/prometheus/alerts.yaml
// and deploy/grafana/**/*.json (flattened by file name). test/helm-chart.spec.ts fails while the
// copies differ from their sources; run `npm run chart:sync-files` after changing either.
import { copyFileSync, existsSync, mkdirSync, readdirSync, rmSync } from 'node:fs';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const chartFiles = path.join(root, 'helm/spool/files');
const alerts = path.join(root, 'deploy/prometheus/alerts.yaml');
const dashboards = path.join(root, 'deploy/grafana');

rmSync(path.join(chartFiles, 'alerts.yaml'), { force: true });
rmSync(path.join(chartFiles, 'dashboards'), { recursive: true, force: true });
mkdirSync(chartFiles, { recursive: true });
const copied = [];
if (existsSync(alerts)) {
  copyFileSync(alerts, path.join(chartFiles, 'alerts.yaml'));
  copied.push('alerts.yaml');
}
if (existsSync(dashboards)) {
  for (const entry of readdirSync(dashboards, { recursive: true, withFileTypes: true })) {
    if (!entry.isFile() || !entry.name.endsWith('.json')) continue;
    mkdirSync(path.join(chartFiles, 'dashboards'), { recursive: true });
    copyFileSync(
      path.join(entry.parentPath, entry.name),
      path.join(chartFiles, 'dashboards', entry.name),
    );
    copied.push(`dashboards/${entry.name}`);
  }
}
process.stdout.write(`chart files: ${copied.length === 0 ? 'none to copy' : copied.join(', ')}\n`);
