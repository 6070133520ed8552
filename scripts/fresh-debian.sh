#!/usr/bin/env bash
# README's two commands on a stock Debian 12, as a new contributor's machine would run them: a minbase
# debootstrap root (made once, copied for each try) with git, build-essential and this machine's Rust toolchain,
# a clone of this repository's HEAD, then `cargo run -p wb-lsp -- check fixtures/example-repo` and
# `./scripts/test.sh`. As root, on Debian, with a Docker engine running on the host (its socket is shared).
#
#   scripts/fresh-debian.sh [DIR]     DIR holds the root and the work tree (default /var/tmp/wb-lsp-fresh)
#
# The work tree is mounted at the same path inside and outside the root, with TMPDIR under it, so the bind
# mounts the tests ask of the host's engine resolve. If the network intercepts TLS, its CAs (in
# /usr/local/share/ca-certificates) are trusted inside the root too: they are the network's, not the project's.
set -euo pipefail
[ "$(id -u)" = 0 ] || { echo "error: run as root (debootstrap, chroot and mounts)" >&2; exit 2; }
repo=$(cd "$(dirname "$0")/.." && pwd)
base=${1:-/var/tmp/wb-lsp-fresh}
pristine=$base/pristine root=$base/root work=$base/work
if grep -q " $base/" /proc/mounts; then
  echo "error: something is still mounted below $base; unmount it first (umount -l)" >&2
  exit 2
fi
command -v debootstrap >/dev/null || apt-get install -y -qq debootstrap
[ -d "$pristine" ] || debootstrap --variant=minbase bookworm "$pristine" http://deb.debian.org/debian
rm -rf "$root" "$work"
cp -a "$pristine" "$root"
mkdir -p "$work" "$root$work" "$root/opt/rust"
unmount() {
  for m in "$root$work" "$root/run/docker.sock" "$root/opt/rust" "$root/dev/pts" "$root/dev" "$root/sys" "$root/proc" "$root"; do
    umount -l "$m" 2>/dev/null || true
  done
}
trap unmount EXIT
# The root is a mount point of its own: bubblewrap (the sandbox fakes, Claude Code) makes `/` a slave mount and
# pivots into it, which fails on a plain directory ("Failed to make / slave").
mount --bind "$root" "$root"
for d in proc sys dev dev/pts; do mount --bind "/$d" "$root/$d"; done
mount --bind "$(rustc --print sysroot)" "$root/opt/rust"
cp /etc/resolv.conf "$root/etc/"
mkdir -p "$root/usr/local/share/ca-certificates"
cp /usr/local/share/ca-certificates/*.crt "$root/usr/local/share/ca-certificates/" 2>/dev/null || true
# A chroot has no init: packages must not start their services (the usual policy-rc.d of chroots and images).
printf '#!/bin/sh\nexit 101\n' > "$root/usr/sbin/policy-rc.d" && chmod +x "$root/usr/sbin/policy-rc.d"
# /var/run is an absolute link to /run in the root: the socket goes to the root's /run.
touch "$root/run/docker.sock" && mount --bind /var/run/docker.sock "$root/run/docker.sock"
mount --bind "$work" "$root$work"
git clone -q "$repo" "$work/wb-lsp"
env -i "$(command -v chroot)" "$root" /bin/bash -c '
  export HOME=/root PATH=/opt/rust/bin:/usr/sbin:/usr/bin:/sbin:/bin DEBIAN_FRONTEND=noninteractive
  apt-get update -qq && apt-get install -y -qq git ca-certificates build-essential >/dev/null
  update-ca-certificates >/dev/null 2>&1; export NODE_EXTRA_CA_CERTS=/etc/ssl/certs/ca-certificates.crt
  cd '"$work"'/wb-lsp && export TMPDIR='"$work"'/tmp && mkdir -p "$TMPDIR"
  echo "== README command 1"; cargo run -q -p wb-lsp -- check fixtures/example-repo; one=$?
  echo "== README command 2"; ./scripts/test.sh; two=$?
  echo "command 1 exit: $one, command 2 exit: $two"; [ "$one" = 0 ] && [ "$two" = 0 ]'
