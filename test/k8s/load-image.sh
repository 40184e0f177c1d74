#!/usr/bin/env bash
# `npm run k8s:load-image`: imports the images `npm run image:build` wrote (dist/image/*.oci.tar:
# localhost/spool:<version> and localhost/etcd:<version>) into the running cluster's containerd,
# where pods find them by name with no registry. Other archives may be named instead.
# Usage: load-image.sh [ARCHIVE.oci.tar...]
set -euo pipefail
. "$(dirname "$0")/lib.sh"
[ -S "$CONTAINERD_SOCK" ] || die "the cluster is not running (no $CONTAINERD_SOCK): npm run k8s:up"
archives=("$@")
if [ "${#archives[@]}" -eq 0 ]; then
  archives=("$REPO_ROOT"/dist/image/*.oci.tar)
  [ -f "${archives[0]}" ] || die "no image archive in dist/image: npm run image:build"
fi
for archive in "${archives[@]}"; do
  [ -f "$archive" ] || die "no such archive: $archive"
  started=$SECONDS
  ctr_k8s images import "$archive" >/dev/null
  ref=$(tar -xOf "$archive" index.json | sed -n 's/.*"org.opencontainers.image.ref.name":"\([^"]*\)".*/\1/p')
  log "imported $ref from $archive in $((SECONDS - started)) s"
done
