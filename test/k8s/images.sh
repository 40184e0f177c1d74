#!/usr/bin/env bash
# Builds the images the cluster itself runs, as OCI archives in $K8S_CACHE/images, once. None is
# pulled from a registry; each is a scratch image around one static binary:
#   registry.k8s.io/pause:3.10               pause/ (Go): the sandbox image containerd expects
#   localhost/busybox:1                      Debian's busybox-static (local-path's helper pods)
#   localhost/coredns:<version>              $K8S_BIN/coredns
#   localhost/local-path-provisioner:<ver>   $K8S_BIN/local-path-provisioner
set -euo pipefail
. "$(dirname "$0")/lib.sh"
export CGO_ENABLED=0 GOMAXPROCS=${GOMAXPROCS:-2} GOFLAGS=-buildvcs=false
scratch=$K8S_CACHE/images-build
mkdir -p "$K8S_IMAGES" "$scratch"

# image NAME REF ROOT ENTRYPOINT [USER]: a scratch image whose / is the folder ROOT.
image() {
  local name=$1 ref=$2 root=$3 entrypoint=$4 user=${5:-} container archive=$K8S_IMAGES/$1.oci.tar
  container=$(buildah_cache from scratch)
  # Through a tar so symbolic links (busybox's applets) stay links.
  tar -C "$root" -cf "$scratch/$name.tar" .
  buildah_cache add "$container" "$scratch/$name.tar" / >/dev/null
  buildah_cache config --entrypoint "$entrypoint" ${user:+--user "$user"} "$container"
  buildah_cache commit --quiet --format oci --rm "$container" "$ref" >/dev/null
  buildah_cache push --quiet "$ref" "oci-archive:$archive.tmp:$ref"
  buildah_cache rmi "$ref" >/dev/null
  mv "$archive.tmp" "$archive"
  rm -f "$scratch/$name.tar"
  log "built $ref into $archive"
}

binary_root() { # NAME: a root folder holding $K8S_BIN/NAME as /NAME
  [ -x "$K8S_BIN/$1" ] || die "$K8S_BIN/$1 is missing: run test/k8s/build-binaries.sh $1"
  rm -rf "$scratch/$1"; mkdir -p "$scratch/$1"; cp "$K8S_BIN/$1" "$scratch/$1/$1"
  echo "$scratch/$1"
}

if [ ! -f "$K8S_IMAGES/pause.oci.tar" ]; then
  mkdir -p "$scratch/pause"
  (cd "$K8S_SRC/pause" && go build -trimpath -ldflags "-s -w" -o "$scratch/pause/pause" .)
  image pause "$PAUSE_IMAGE" "$scratch/pause" '["/pause"]' 65535:65535
fi
if [ ! -f "$K8S_IMAGES/busybox.oci.tar" ]; then
  # Downloaded through the machine's apt sources and unpacked; nothing is installed.
  root=$scratch/busybox
  rm -rf "$root" "$scratch/busybox-deb"; mkdir -p "$root/bin" "$root/tmp" "$scratch/busybox-deb"
  (cd "$scratch/busybox-deb" && apt-get download -q busybox-static >/dev/null) || die "apt-get download busybox-static failed"
  dpkg-deb -x "$scratch"/busybox-deb/busybox-static_*.deb "$scratch/busybox-deb/x"
  cp "$scratch/busybox-deb/x/bin/busybox" "$root/bin/busybox"
  chmod 1777 "$root/tmp"
  for applet in $("$root/bin/busybox" --list); do [ "$applet" = busybox ] || ln -s busybox "$root/bin/$applet"; done
  image busybox localhost/busybox:1 "$root" '["/bin/sh"]'
fi
[ -f "$K8S_IMAGES/coredns.oci.tar" ] ||
  image coredns "localhost/coredns:$COREDNS_VERSION" "$(binary_root coredns)" '["/coredns"]'
[ -f "$K8S_IMAGES/local-path-provisioner.oci.tar" ] ||
  image local-path-provisioner "localhost/local-path-provisioner:$LOCAL_PATH_VERSION" \
    "$(binary_root local-path-provisioner)" '["/local-path-provisioner"]'
