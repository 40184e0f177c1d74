#!/usr/bin/env bash
# `npm run image:build`: builds deploy/Dockerfile, the file users build, with buildah (no Docker
# engine, no registry login), and writes dist/image/spool.oci.tar tagged localhost/spool:<version>
# (the chart's default image). Also writes dist/image/etcd.oci.tar, localhost/etcd:<version>, an
# etcd image made the same way for clusters that pull nothing (test/k8s); users of a real
# cluster take the upstream etcd image the chart names by default.
#
# The Dockerfile's two FROM images, node:<NODE_VERSION>-bookworm and -bookworm-slim, are made
# here rather than pulled: a Debian root filesystem from debootstrap (minbase, from this
# machine's apt mirror) plus the Node.js 20 runtime installed on this machine (its `nodejs`
# package: node, npm and the headers node-gyp compiles the native addon against),
# tagged with the names the Dockerfile asks for. The Dockerfile's RUN steps still fetch what
# they fetch (apt-get in the build stage, npm ci), from the package registries.
#
# Everything buildah keeps is under ${SPOOL_IMAGE_CACHE:-~/.cache/spool/image} (vfs storage, so
# nothing stays mounted); the base image is made once and reused.
# Usage: deploy/image/build.sh [--no-etcd | --etcd-only]
set -euo pipefail
cd "$(dirname "$0")/../.."
started=$SECONDS
log() { printf '%s [image:build] %s\n' "$(date +%T)" "$*" >&2; }
die() { log "error: $*"; exit 1; }

version=$(node -p 'require("./package.json").version')
etcd_version=$(sed -n '/^etcd:/,/^[a-z]/ { s/^    tag: v\{0,1\}\([0-9.]*\).*/\1/p }' helm/spool/values.yaml | head -1)
[ -n "$etcd_version" ] || die "could not read etcd.image.tag from helm/spool/values.yaml"
cache=${SPOOL_IMAGE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/spool/image}
out=dist/image
buildah_store() { nice -n 10 buildah --root "$cache/storage" --runroot "$cache/run" --storage-driver vfs "$@"; }

[ "$(id -u)" = 0 ] || die "needs root (buildah's RUN steps chroot into the image)"
for tool in buildah debootstrap dpkg-query; do
  command -v "$tool" >/dev/null 2>&1 || die "$tool is missing (apt-get install buildah debootstrap)"
done
node_version=$(dpkg-query -W -f '${Version}' nodejs 2>/dev/null | sed 's/-.*//') || true
case $node_version in
  20.*) ;;
  *) die "the base image takes Node.js 20 from this machine's nodejs package, found '${node_version:-none}'" ;;
esac
mkdir -p "$cache" "$out"

if [ "${1:-}" != --etcd-only ]; then
## The base image, once per Node.js version: Debian's minbase plus the nodejs package's files.
base=docker.io/library/node:$node_version-bookworm
if ! buildah_store inspect --type image "$base-slim" >/dev/null 2>&1; then
  suite=$(. /etc/os-release && echo "$VERSION_CODENAME")
  [ "$suite" = bookworm ] || die "the Dockerfile's FROM names bookworm; this machine runs $suite"
  mirror=$(. test/k8s/lib.sh && debian_mirror)
  [ -n "$mirror" ] || die "no apt source for $suite in /etc/apt/sources.list{,.d/}"
  root=$cache/rootfs
  rm -rf "$root"
  log "debootstrap --variant=minbase $suite from $mirror"
  debootstrap --variant=minbase "$suite" "$root" "$mirror" >"$cache/debootstrap.log" 2>&1 ||
    die "debootstrap failed; see $cache/debootstrap.log"
  # The runtime as it is on disk (npm may have been upgraded since the package was installed):
  # node, its headers, npm and corepack, and their commands' links.
  (cd / && for path in usr/bin/node usr/include/node usr/lib/node_modules/npm usr/lib/node_modules/corepack \
    usr/bin/npm usr/bin/npx usr/bin/corepack; do [ -e "$path" ] && echo "$path"; done) |
    tar -C / -cf - -T - | tar -C "$root" -xf -
  chroot "$root" node --version >/dev/null || die "node does not run in the Debian root filesystem"
  rm -rf "$root"/var/cache/apt/archives/*.deb "$root"/var/lib/apt/lists/*
  tar -C "$root" -cf "$cache/rootfs.tar" .
  container=$(buildah_store from scratch)
  buildah_store add "$container" "$cache/rootfs.tar" / >/dev/null
  buildah_store config --env PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    --env NODE_VERSION="$node_version" --cmd node "$container"
  buildah_store commit --quiet --format oci --rm "$container" "$base-slim" >/dev/null
  rm -rf "$root" "$cache/rootfs.tar"
  buildah_store rmi "$base" >/dev/null 2>&1 || true
  log "base image $base-slim made"
fi
if ! buildah_store inspect --type image "$base" >/dev/null 2>&1; then
  # The build stage's npm ci reaches the npm registry over TLS: it trusts what this machine
  # trusts (a proxy's CA, say), through the machine's CA bundle. The runtime stage's base
  # (-slim) makes no outgoing TLS connection and carries none of it.
  container=$(buildah_store from "$base-slim")
  buildah_store copy "$container" /etc/ssl/certs/ca-certificates.crt /etc/ssl/certs/ca-certificates.crt >/dev/null
  buildah_store config --env NODE_EXTRA_CA_CERTS=/etc/ssl/certs/ca-certificates.crt "$container"
  buildah_store commit --quiet --format oci --rm "$container" "$base" >/dev/null
  log "base image $base made"
fi

## The image, from the Dockerfile users build. --network host: RUN steps reach the registries as
## this machine does, with no bridge or private range set up for them. --layers: after a failed
## step, the next build starts from the last step that passed (apt-get and npm ci are minutes).
image=localhost/spool:$version
log "buildah build -f deploy/Dockerfile -t $image"
buildah_store build --pull-never --isolation chroot --network host --layers --force-rm \
  --build-arg NODE_VERSION="$node_version" -f deploy/Dockerfile -t "$image" . >&2
rm -f "$out/spool.oci.tar"
buildah_store push --quiet "$image" "oci-archive:$out/spool.oci.tar:$image"
# vfs keeps each cached step as a full copy of its root (1.5 GB each): once the image is out,
# only the base images and the last image stay.
buildah_store rmi --prune >/dev/null 2>&1 || true
log "$image in $out/spool.oci.tar ($(du -m "$out/spool.oci.tar" | cut -f1) MB)"
fi

## etcd, built from the Go module proxy at the chart's version: a static binary in a scratch
## image, started as the chart starts it (`etcd`, user 10001, a read-only root).
if [ "${1:-}" != --no-etcd ]; then
  etcd_image=localhost/etcd:v$etcd_version
  etcd_binary=$cache/etcd-v$etcd_version/etcd
  if [ ! -x "$etcd_binary" ]; then
    module=$cache/etcd-v$etcd_version/module
    mkdir -p "$module"
    # etcd's own main package lives in a module with local replace directives, which
    # `go install` refuses; a small module of ours calls the same entry point.
    printf 'module spool-etcd\n\ngo 1.23\n' >"$module/go.mod"
    printf 'package main\n\nimport (\n\t"os"\n\n\t"go.etcd.io/etcd/server/v3/etcdmain"\n)\n\nfunc main() { etcdmain.Main(os.Args) }\n' >"$module/main.go"
    log "building etcd v$etcd_version with the Go module proxy"
    (cd "$module" && PATH=$PATH:/usr/local/go/bin GOFLAGS=-mod=mod go get "go.etcd.io/etcd/server/v3@v$etcd_version" >&2 &&
      PATH=$PATH:/usr/local/go/bin CGO_ENABLED=0 GOMAXPROCS=2 nice -n 10 go build -mod=mod -trimpath -ldflags "-s -w" -o "$etcd_binary" .) ||
      die "building etcd v$etcd_version failed"
  fi
  root=$cache/etcd-root
  rm -rf "$root"; mkdir -p "$root/usr/local/bin" "$root/tmp"; chmod 1777 "$root/tmp"
  cp "$etcd_binary" "$root/usr/local/bin/etcd"
  tar -C "$root" -cf "$cache/etcd-root.tar" .
  container=$(buildah_store from scratch)
  buildah_store add "$container" "$cache/etcd-root.tar" / >/dev/null
  buildah_store config --env PATH=/usr/local/bin --entrypoint '["etcd"]' --user 10001:10001 "$container"
  buildah_store commit --quiet --format oci --rm "$container" "$etcd_image" >/dev/null
  rm -rf "$root" "$cache/etcd-root.tar"
  rm -f "$out/etcd.oci.tar"
  buildah_store push --quiet "$etcd_image" "oci-archive:$out/etcd.oci.tar:$etcd_image"
  log "$etcd_image in $out/etcd.oci.tar ($(du -m "$out/etcd.oci.tar" | cut -f1) MB)"
fi
log "done in $((SECONDS - started)) s"
