#!/usr/bin/env bash
# The package on a clean Debian system: builds dfsssp-rs_*.deb here (scripts/build-deb.sh, or
# takes DEB=FILE), debootstraps a minimal Debian bookworm into a fresh directory, and there runs
# scripts/package-test.sh on that package: `apt-get install ./dfsssp-rs_*.deb` must pull opensm
# and everything else it needs from the Debian mirror by itself, then OpenSM in ibsim routes a
# torus with dfsssp-rs from the documented config lines alone, and routes with its fallback once
# the package is removed. Not part of scripts/test.sh (a few minutes and ~400 MB of downloads).
#
# BUILD=1 builds the package in the chroot instead, from nothing but build-essential, the
# Build-Depends of debian/control (`apt-get build-dep`) and a Rust toolchain from rustup: a check
# that debian/control lists what the build needs (longer: every crate is compiled).
#
#   sudo scripts/package-chroot-test.sh            MIRROR=... to use another Debian mirror,
#                                                  KEEP=1 to keep the chroot afterwards.
set -euo pipefail
cd "$(dirname "$0")/.."
[ "$(id -u)" -eq 0 ] || { echo "package-chroot-test: needs root (debootstrap, chroot, mount)" >&2; exit 1; }
MIRROR=${MIRROR:-http://deb.debian.org/debian}
t0=$(date +%s)

BUILD=${BUILD:-0}
if [ "$BUILD" != 1 ]; then
    if [ -z "${DEB:-}" ]; then
        source scripts/setup.sh
        DEB=$(scripts/build-deb.sh)
    fi
    DEB=$(realpath "$DEB")
fi
command -v debootstrap >/dev/null ||
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq debootstrap >/dev/null

ROOT=$(mktemp -d /var/tmp/dfsssp-chroot.XXXXXX)
mounted=()
cleanup() {
    local m
    for ((i = ${#mounted[@]} - 1; i >= 0; i--)); do umount -l "${mounted[i]}" 2>/dev/null || true; done
    if [ "${KEEP:-0}" = 1 ]; then echo "package-chroot-test: chroot kept in $ROOT" >&2; else rm -rf "$ROOT"; fi
}
trap cleanup EXIT

echo "== debootstrap --variant=minbase bookworm $ROOT $MIRROR" >&2
debootstrap --variant=minbase bookworm "$ROOT" "$MIRROR" >"$ROOT.debootstrap.log" 2>&1 ||
    { tail -n 20 "$ROOT.debootstrap.log" >&2; exit 1; }
rm -f "$ROOT.debootstrap.log"
cp /etc/resolv.conf "$ROOT/etc/resolv.conf"
for m in proc dev dev/pts; do
    case $m in
        proc) mount -t proc proc "$ROOT/proc" ;;
        *) mount --bind "/$m" "$ROOT/$m" ;;
    esac
    mounted+=("$ROOT/$m")
done
t1=$(date +%s)

in_chroot() {
    chroot "$ROOT" /usr/bin/env -i HOME=/root PATH=/root/.cargo/bin:/usr/sbin:/usr/bin:/sbin:/bin \
        LANG=C.UTF-8 DEBIAN_FRONTEND=noninteractive "$@"
}
in_chroot apt-get update -qq
if [ "$BUILD" = 1 ]; then
    mkdir -p "$ROOT/build/dfsssp-rs"
    if [ -e .git ]; then
        git ls-files -z --cached --others --exclude-standard |
            tar --null -T - --ignore-failed-read -cf - | tar -xf - -C "$ROOT/build/dfsssp-rs"
    else
        tar --exclude=./target --exclude=./.git -cf - . | tar -xf - -C "$ROOT/build/dfsssp-rs"
    fi
    echo "== in the chroot: build-essential, apt-get build-dep, rustup, scripts/build-deb.sh" >&2
    in_chroot apt-get install -y -qq build-essential curl ca-certificates >/dev/null
    # The host's own local CAs (public certificates), for networks that intercept TLS: rustup
    # and crates.io are fetched over https.
    if compgen -G "/usr/local/share/ca-certificates/*.crt" >/dev/null; then
        cp /usr/local/share/ca-certificates/*.crt "$ROOT/usr/local/share/ca-certificates/"
        in_chroot update-ca-certificates >/dev/null
    fi
    in_chroot apt-get build-dep -y -qq /build/dfsssp-rs >/dev/null
    in_chroot bash -c 'curl --proto "=https" --tlsv1.2 -sSf -o /tmp/rustup-init \
        "https://static.rust-lang.org/rustup/dist/$(uname -m)-unknown-linux-gnu/rustup-init" &&
        chmod +x /tmp/rustup-init && /tmp/rustup-init -y -q --profile minimal >/dev/null'
    tb=$(date +%s)
    in_chroot CARGO_BUILD_JOBS="${CARGO_BUILD_JOBS:-$(nproc)}" \
        bash -c 'cd /build/dfsssp-rs && scripts/build-deb.sh /test' >&2
    echo "   package build in the chroot: $(($(date +%s) - tb)) s" >&2
    DEB=$(ls "$ROOT"/test/dfsssp-rs_*.deb)
    cp -r "$ROOT/build/dfsssp-rs/scripts" "$ROOT/test/"
else
    # Only what the test needs: the package, the test and its ibsim helpers. No toolchain, no
    # build dependencies: the package must stand on its own.
    mkdir -p "$ROOT/test/scripts"
    cp "$DEB" "$ROOT/test/"
    cp scripts/package-test.sh scripts/ibsim-lib.sh "$ROOT/test/scripts/"
fi
echo "== in the chroot: scripts/package-test.sh on $(basename "$DEB")" >&2
in_chroot DEB="/test/$(basename "$DEB")" bash -c 'cd /test && scripts/package-test.sh'
echo "package-chroot-test: OK (debootstrap $((t1 - t0)) s, test in the chroot $(($(date +%s) - t1)) s)" >&2
