#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# build-image.sh [DEB]: the affinityd OCI image, from the Debian package,
# pulling nothing from a container registry: a Debian 12 minbase root file
# system from the apt mirror this machine uses (mmdebstrap), the .deb
# installed in it, imported with `podman import`. Without DEB, the package
# is built first from the git tree's HEAD (git archive into a temporary
# directory, dpkg-buildpackage -us -uc -b), so nothing is written into the
# tree or beside it.
#
# Prints the image's name on stdout (the last line); progress goes to
# stderr:  IMAGE=$(deploy/image/build-image.sh)
#
# The image runs affinityd in the foreground (its log on stderr, which the
# runtime keeps); `podman stop` / a pod's termination sends SIGTERM and the
# daemon restores every change before it exits. deploy/README.md says how
# to run it.
#
# Env:
#   AFFINITYD_IMAGE=name:tag      (default localhost/affinityd:VERSION)
#   AFFINITYD_IMAGE_SOURCES=file  apt sources for mmdebstrap
#                                 (default /etc/apt/sources.list.d/debian.sources)
# Needs root, mmdebstrap and podman; without DEB also git, debhelper,
# dpkg-dev and the build dependencies (debian/control).
set -euo pipefail
exec 3>&1 1>&2
log() { printf 'build-image: %s\n' "$*"; }
die() { log "ERROR: $*"; exit 1; }

top=$(cd "$(dirname "$0")/../.." && pwd)
SOURCES=${AFFINITYD_IMAGE_SOURCES:-/etc/apt/sources.list.d/debian.sources}
[ "$(id -u)" = 0 ] || die "must run as root (mmdebstrap, podman import)"
for c in mmdebstrap podman; do
	command -v "$c" >/dev/null || die "needs $c (apt-get install $c)"
done
[ -r "$SOURCES" ] || die "apt sources $SOURCES not readable"

work=$(mktemp -d /var/tmp/affinityd-image.XXXXXX)
trap 'rm -rf "$work"' EXIT
chmod 755 "$work"

deb=${1:-}
if [ -z "$deb" ]; then
	log "building the .deb from $(git -C "$top" rev-parse --short HEAD)"
	mkdir "$work/src"
	git -C "$top" archive HEAD | tar -x -C "$work/src"
	(cd "$work/src" && dpkg-buildpackage -us -uc -b) >"$work/deb.log" 2>&1 ||
		{ tail -40 "$work/deb.log"; die "dpkg-buildpackage failed"; }
	deb=$(ls "$work"/affinityd_*.deb)
fi
[ -r "$deb" ] || die "no package at $deb"
deb=$(readlink -f "$deb")
version=$(dpkg-deb -f "$deb" Version)
version=${version%-*}   # the upstream version, as configure.ac and the manifest name it
IMAGE=${AFFINITYD_IMAGE:-localhost/affinityd:$version}
# in a world-readable place: apt hands the path to dpkg inside the chroot
cp "$deb" "$work/affinityd.deb"
chmod 644 "$work/affinityd.deb"

log "mmdebstrap bookworm minbase + $(basename "$deb") from $SOURCES"
# The file-mirror-automount hook makes the .deb visible inside the chroot
# at the same path. Docs, man pages and locales are left out: nobody reads
# them in a container (affctl --help and the man pages on the host do).
mmdebstrap --quiet --variant=minbase \
	--include="$work/affinityd.deb" \
	--hook-dir=/usr/share/mmdebstrap/hooks/file-mirror-automount \
	--dpkgopt='path-exclude=/usr/share/man/*' \
	--dpkgopt='path-exclude=/usr/share/doc/*' \
	--dpkgopt='path-include=/usr/share/doc/*/copyright' \
	--dpkgopt='path-exclude=/usr/share/locale/*' \
	--dpkgopt='path-exclude=/usr/share/info/*' \
	--customize-hook='rm -rf "$1"/var/cache/apt/* "$1"/var/lib/apt/lists/*' \
	bookworm "$work/rootfs.tar" "$SOURCES"

log "podman import -> $IMAGE ($(du -m "$work/rootfs.tar" | cut -f1) MiB)"
podman import \
	--change 'ENTRYPOINT ["/usr/sbin/affinityd"]' \
	--change 'CMD []' \
	--change 'STOPSIGNAL SIGTERM' \
	--change "LABEL org.opencontainers.image.title=affinityd org.opencontainers.image.version=$version" \
	--message "affinityd $version from $(basename "$deb")" \
	"$work/rootfs.tar" "$IMAGE" >/dev/null
echo "$IMAGE" >&3
