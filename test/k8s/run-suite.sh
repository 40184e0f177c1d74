#!/usr/bin/env bash
# `npm run test:k8s`: the chart on a real cluster, from nothing to the suite's JSON line:
# the projects built (the CLI and SDK the suite drives), the cluster up (test/k8s/up.sh), the
# image built from deploy/Dockerfile and loaded, then test/k8s/suite.k8s.ts, then the cluster
# stopped again (down.sh), pass or fail. SPOOL_K8S_KEEP=1 leaves it running for a look around;
# SPOOL_K8S_SKIP_IMAGE=1 loads the image dist/image already holds instead of building it.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
cd "$REPO_ROOT"
export NX_DAEMON=false NX_TUI=false
started=$SECONDS

npx nx run-many -t build --output-style=static >&2
if [ "${SPOOL_K8S_KEEP:-0}" != 1 ]; then trap 'bash "$K8S_SRC/down.sh"' EXIT; fi
# The cluster first: up.sh installs what a fresh machine lacks (buildah and debootstrap among
# them), which the image build needs.
bash "$K8S_SRC/up.sh" >/dev/null
if [ "${SPOOL_K8S_SKIP_IMAGE:-0}" != 1 ] || [ ! -f dist/image/spool.oci.tar ]; then bash deploy/image/build.sh; fi
bash "$K8S_SRC/load-image.sh"
npx vitest run --config test/k8s/vitest.config.mts
log "test:k8s done in $((SECONDS - started)) s"
