#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# build-image.sh - build (or reuse) the Debian 12 test VM image for affinityd.
#
# Why a VM at all: the development and CI machines have cgroup v1, no
# writable /sys/kernel/debug/sched/features and no systemd as PID 1, so the
# daemon's real job (systemctl, cgroup v2 cpu.weight, sched_features, restore
# on stop) can only be tested end to end in a guest.
#
# Usage: tests/vm/build-image.sh        (as root on a fresh machine)
#   Prints the image directory on stdout (last line); progress goes to stderr,
#   so callers do   IMG=$(tests/vm/build-image.sh)
#
# Image directory contents (run-in-vm.sh boots these):
#   rootfs.img  sparse raw ext4, never written by a run (booted snapshot=on)
#   vmlinuz     the host's Debian 6.1 kernel (linux-image-amd64)
#   initrd.img  a tiny busybox initrd: virtio-blk + ext4 (+ 9p) modules only
#   kver        kernel version string
#   complete    written last; an image dir without it is never used
#
# Cache (env AFFINITYD_VM_CACHE, default /var/tmp/affinityd-vmtest):
#   tar/rootfs-<H1>.tar  mmdebstrap output; H1 = hash(guest package list,
#                        apt sources, HARNESS_VERSION). Slow step, ~1 min.
#   img-<H2>/            H2 = hash(H1, kernel version, this script's text):
#                        editing the customisation below only redoes the fast
#                        step (unpack + mkfs, ~15 s), not the download.
#   Old tarballs/images are pruned after a successful build.
#
# Env knobs:
#   AFFINITYD_VM_CACHE=dir        cache location (see above)
#   AFFINITYD_VM_KVER=6.1.0-N-amd64  guest kernel (default: newest Debian one in /boot)
#   AFFINITYD_VM_EXTRA_PKGS=a,b   more guest packages (part of the hash)
#   AFFINITYD_VM_REBUILD=1        ignore the cache
#   AFFINITYD_VM_SOURCES=file     apt sources given to mmdebstrap
#                                 (default /etc/apt/sources.list.d/debian.sources)
set -euo pipefail

# Bump when the image layout/runner protocol changes incompatibly with
# run-in-vm.sh (the script text is hashed too, this makes intent explicit).
HARNESS_VERSION=1

# stdout carries only the image path (callers capture it); everything else,
# including the chatter of apt, mmdebstrap and mkfs, goes to stderr.
exec 3>&1 1>&2
log() { printf 'build-image: %s\n' "$*"; }
die() { log "ERROR: $*"; exit 1; }

CACHE=${AFFINITYD_VM_CACHE:-/var/tmp/affinityd-vmtest}
SOURCES=${AFFINITYD_VM_SOURCES:-/etc/apt/sources.list.d/debian.sources}
SELF=$(readlink -f "$0")
T0=$(date +%s.%N)

# Guest packages.
#  - systemd, systemd-sysv, udev, dbus: systemd as PID 1 and the system bus
#    (busctl, sd-bus clients and `systemd-run` need dbus).
#  - kmod: modprobe for the 9p modules; procps: sysctl, ps, pgrep;
#    util-linux: taskset (in minbase anyway, listed so it is explicit).
#  - stress-ng: CPU hogs; linux-perf: `perf bench sched pipe` (a ping-pong pair);
#    jq: e2e.sh validates `affctl ... --json` output (no python3 in minbase).
#  - Runtime libraries of affinityd/affctl (configure.ac's PKG_CHECK_MODULES):
#    libsystemd0, libcgroup2 (Debian 12's name for libcgroup 2.0.2),
#    libnl-3-200, libnl-genl-3-200, libinih1, libjson-c5.
GUEST_PKGS="systemd,systemd-sysv,udev,dbus,kmod,procps,util-linux,stress-ng,linux-perf,jq"
GUEST_PKGS+=",libsystemd0,libcgroup2,libnl-3-200,libnl-genl-3-200,libinih1,libjson-c5"
GUEST_PKGS+=${AFFINITYD_VM_EXTRA_PKGS:+,$AFFINITYD_VM_EXTRA_PKGS}

# Host tools. linux-image-amd64 gives the Debian 6.1 guest kernel and its
# modules (the host runs a custom kernel with an empty /boot).
HOST_PKGS="qemu-system-x86 linux-image-amd64 mmdebstrap busybox cpio kmod e2fsprogs"

host_pkgs_missing() {
    local p missing=
    for p in $HOST_PKGS; do
        dpkg-query -W -f='${Status}\n' "$p" 2>/dev/null | grep -q '^install ok installed$' ||
            missing+=" $p"
    done
    echo "$missing"
}

# Newest Debian kernel that has both a vmlinuz and its modules.
pick_kver() {
    local k best=
    for k in /boot/vmlinuz-*; do
        [ -e "$k" ] || continue
        k=${k#/boot/vmlinuz-}
        [ -e "/lib/modules/$k/modules.dep" ] && best+="$k"$'\n'
    done
    printf '%s' "$best" | sort -V | tail -n1
}

# 0. Host packages (needs root; a no-op when present).
missing=$(host_pkgs_missing)
if [ -n "$missing" ]; then
    [ "$(id -u)" = 0 ] || die "missing host packages:$missing (run as root to install them)"
    log "installing host packages:$missing"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -q
    # shellcheck disable=SC2086 # word splitting of the list is intended
    apt-get install -y -q --no-install-recommends $missing
fi

KVER=${AFFINITYD_VM_KVER:-$(pick_kver)}
[ -n "$KVER" ] && [ -e "/boot/vmlinuz-$KVER" ] && [ -d "/lib/modules/$KVER" ] ||
    die "no usable guest kernel in /boot (+/lib/modules): '$KVER'"

[ -r "$SOURCES" ] || die "apt sources file $SOURCES not readable"
H1=$(printf '%s\n' "v$HARNESS_VERSION" "$GUEST_PKGS" "$(cat "$SOURCES")" | sha256sum | cut -c1-12)
H2=$(printf '%s\n' "$H1" "$KVER" "$(cat "$SELF")" | sha256sum | cut -c1-12)
TAR=$CACHE/tar/rootfs-$H1.tar
IMG=$CACHE/img-$H2

if [ -z "${AFFINITYD_VM_REBUILD:-}" ] && [ -e "$IMG/complete" ]; then
    log "cached image $IMG (kernel $KVER)"
    echo "$IMG" >&3
    exit 0
fi

[ "$(id -u)" = 0 ] || die "must run as root to build the image (mmdebstrap, root-owned files)"
mkdir -p "$CACHE/tar"

# One builder at a time: a second concurrent caller waits, then finds the
# image complete and reuses it.
exec 9>"$CACHE/.lock"
flock 9
if [ -z "${AFFINITYD_VM_REBUILD:-}" ] && [ -e "$IMG/complete" ]; then
    log "image built by a concurrent run: $IMG"
    echo "$IMG" >&3
    exit 0
fi

WORK=$(mktemp -d "$CACHE/.build.XXXXXX")
trap 'rm -rf "$WORK"' EXIT

# 1. Root filesystem tarball (the slow, network-bound step; cached by H1).
if [ -n "${AFFINITYD_VM_REBUILD:-}" ] || [ ! -s "$TAR" ]; then
    log "mmdebstrap bookworm -> $TAR"
    t=$(date +%s)
    # - Check-Valid-Until=false: the host's sources may be a dated snapshot
    #   whose Release file has expired.
    # - path-exclude: docs/man/locales are never read in the guest and cost
    #   mkfs time and image size.
    # - The output name must end in .tar: mmdebstrap picks the format from it
    #   (anything else silently becomes a directory).
    mmdebstrap --quiet --variant=minbase --include="$GUEST_PKGS" \
        --aptopt='Acquire::Check-Valid-Until "false"' \
        --dpkgopt='path-exclude=/usr/share/man/*' \
        --dpkgopt='path-exclude=/usr/share/doc/*' \
        --dpkgopt='path-include=/usr/share/doc/*/copyright' \
        --dpkgopt='path-exclude=/usr/share/locale/*' \
        --dpkgopt='path-exclude=/usr/share/info/*' \
        bookworm "$WORK/rootfs.tar" "$SOURCES"
    mv "$WORK/rootfs.tar" "$TAR"
    log "mmdebstrap took $(( $(date +%s) - t )) s, $(du -m "$TAR" | cut -f1) MiB"
fi

# 2. Unpack and customise.
ROOT=$WORK/root
mkdir "$ROOT"
tar -C "$ROOT" -xpf "$TAR"

echo affvm > "$ROOT/etc/hostname"
printf '127.0.0.1 localhost\n127.0.1.1 affvm\n' > "$ROOT/etc/hosts"
echo '/dev/vda / ext4 rw,errors=remount-ro 0 1' > "$ROOT/etc/fstab"
# Passwordless root on the serial console, for debugging a hung run by hand.
chroot "$ROOT" passwd -d root >/dev/null
# Timers and gettys nobody needs in a throw-away VM: each costs boot time
# under TCG, and a timer firing mid-test would add noise to the measurements.
# systemd-logind sat on the boot's critical path for ~3.4 s (measured with
# systemd-analyze critical-chain) and nothing here logs in through it.
# The servers of AFFINITYD_VM_EXTRA_PKGS too: the tests start private
# instances, and a packaged MariaDB starting at boot kept the guest's CPUs
# busy into the first tests (their daemons counted "4 hogs > 2 usable CPUs").
for u in apt-daily.timer apt-daily-upgrade.timer dpkg-db-backup.timer \
         e2scrub_all.timer e2scrub_reap.service fstrim.timer \
         getty@tty1.service getty-static.service systemd-logind.service \
         proc-sys-fs-binfmt_misc.automount systemd-binfmt.service \
         mariadb.service redis-server.service; do
    ln -sf /dev/null "$ROOT/etc/systemd/system/$u"
done

# 9p client modules: the image has no /lib/modules at all; copy exactly the
# modules 9p needs (with dependencies) from the host's matching kernel, plus
# the module index files, and let depmod build the image's index.
for m in 9pnet_virtio 9p; do
    modprobe -S "$KVER" --show-depends "$m" | awk '$1 == "insmod" { print $2 }'
done | sort -u | while read -r ko; do
    dst=$ROOT/usr${ko#/usr}
    mkdir -p "$(dirname "$dst")"
    cp "$ko" "$dst"
done
cp /lib/modules/"$KVER"/modules.{order,builtin,builtin.modinfo} "$ROOT/usr/lib/modules/$KVER/"
depmod -b "$ROOT" "$KVER"

# The in-guest runner (protocol shared with run-in-vm.sh):
#   9p tag "affctl"   -> /run/affvm   control dir: cmd (in), output, rc (out)
#   9p tag "affshare" -> /mnt/share   the caller's share dir (cwd of the command)
# It waits for the boot transaction to end (possible because the unit is
# Type=exec, see below), runs `bash cmd` as root, writes the exit code and
# returns; SuccessAction/FailureAction then power the VM off.
install -d "$ROOT/usr/lib/affvm"
cat > "$ROOT/usr/lib/affvm/runner" <<'EOF'
#!/bin/bash
set -u
console() { echo "affvm-runner: $*" >/dev/ttyS0; }
modprobe 9pnet_virtio && modprobe 9p || console "modprobe 9p failed"
# cache=none: the host tails the output file while the guest writes it.
opts=trans=virtio,version=9p2000.L,msize=512000,cache=none
mkdir -p /run/affvm /mnt/share
mount -t 9p -o "$opts" affctl /run/affvm || { console "cannot mount control dir"; exit 1; }
mount -t 9p -o "$opts" affshare /mnt/share || { console "cannot mount share"; exit 1; }
state=$(systemctl is-system-running --wait 2>&1)
{
    echo "system state: $state; command starts at uptime $(cut -d' ' -f1 /proc/uptime) s"
    systemd-analyze time 2>&1 | head -n1
} > /run/affvm/boot-info
cd /mnt/share
AFFINITYD_VM_SHARE=/mnt/share bash /run/affvm/cmd >> /run/affvm/output 2>&1 < /dev/null
rc=$?
echo "$rc" > /run/affvm/rc.tmp && mv /run/affvm/rc.tmp /run/affvm/rc
sync
exit 0
EOF
chmod 755 "$ROOT/usr/lib/affvm/runner"
cat > "$ROOT/etc/systemd/system/affvm-runner.service" <<'EOF'
[Unit]
Description=affinityd VM test: run the host's command, then power off
After=multi-user.target
# Only when booted by run-in-vm.sh (kernel command line has affvm=1).
ConditionKernelCommandLine=affvm=1
# These are [Unit] options: in [Service] systemd ignores them (a journal
# warning only) and the VM never powers off.
SuccessAction=poweroff-force
FailureAction=poweroff-force

[Service]
# exec, not oneshot: a oneshot would keep the boot transaction open for the
# whole test, so `is-system-running --wait` and systemd-analyze would hang.
Type=exec
ExecStart=/usr/lib/affvm/runner
StandardOutput=journal+console
StandardError=journal+console

[Install]
WantedBy=multi-user.target
EOF
ln -sf /etc/systemd/system/affvm-runner.service \
    "$ROOT/etc/systemd/system/multi-user.target.wants/affvm-runner.service"

# 3. ext4 image straight from the directory (mkfs -d: no loop mount needed).
#    2 GiB sparse leaves room for the installed daemon, journals and tests.
mkfs.ext4 -q -F -L affvm -d "$ROOT" "$WORK/rootfs.img" 2G
rm -rf "$ROOT"

# 4. Tiny initrd. Debian's own (initramfs-tools, ~30 MB) costs ~7 s of boot
#    under TCG unpacking and coldplugging modules we do not need. This one
#    insmods virtio-pci/blk + ext4 (crc32c_generic: ext4's checksum must not
#    depend on which crc32c accelerator the emulated CPU offers), mounts
#    /dev/vda and switch_roots to systemd.
IR=$WORK/initrd
mkdir -p "$IR"/{bin,dev,proc,sys,newroot}
cp /bin/busybox "$IR/bin/"
# Debian's busybox is dynamically linked: bring its libraries along.
for lib in $(ldd /bin/busybox | grep -o '/[^ ]*'); do
    mkdir -p "$IR$(dirname "$lib")"
    cp -L "$lib" "$IR$lib"
done
for a in sh mount umount insmod switch_root sleep poweroff; do ln -s busybox "$IR/bin/$a"; done
for m in virtio_pci virtio_blk crc32c_generic ext4; do
    modprobe -S "$KVER" --show-depends "$m" | awk '$1 == "insmod" { print $2 }'
done | awk '!seen[$0]++' > "$IR/modules.list"
while read -r ko; do
    mkdir -p "$IR$(dirname "$ko")"
    cp "$ko" "$IR$ko"
done < "$IR/modules.list"
cat > "$IR/init" <<'EOF'
#!/bin/sh
export PATH=/bin
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
while read -r ko; do insmod "$ko" 2>/dev/null; done < /modules.list
# virtio-blk probes asynchronously: wait up to 10 s for the disk.
i=0
while [ ! -b /dev/vda ] && [ $i -lt 200 ]; do sleep 0.05; i=$((i + 1)); done
if ! mount -t ext4 -o rw /dev/vda /newroot; then
    echo "affvm-initrd: cannot mount /dev/vda" > /dev/console
    poweroff -f
fi
umount /proc /sys
mount --move /dev /newroot/dev
exec switch_root /newroot /sbin/init
EOF
chmod 755 "$IR/init"
(cd "$IR" && find . | cpio -o -H newc --quiet | gzip -1) > "$WORK/initrd.img"

cp "/boot/vmlinuz-$KVER" "$WORK/vmlinuz"
echo "$KVER" > "$WORK/kver"

# 5. Publish atomically: a half-built image dir is never visible as complete.
rm -rf "$IMG"
mkdir "$IMG"
mv "$WORK/rootfs.img" "$WORK/vmlinuz" "$WORK/initrd.img" "$WORK/kver" "$IMG/"
date -u +%FT%TZ > "$IMG/complete"

# Prune stale cache entries (a changed package list or script leaves the old
# ones behind; each image is ~1 GiB on disk). A VM still booted from a pruned
# image keeps running: qemu holds its files open.
for d in "$CACHE"/img-*; do
    [ "$d" = "$IMG" ] || rm -rf "$d"
done
for f in "$CACHE"/tar/rootfs-*.tar; do
    [ "$f" = "$TAR" ] || rm -f "$f"
done

log "built $IMG (kernel $KVER) in $(awk -v a="$T0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }') s"
echo "$IMG" >&3
