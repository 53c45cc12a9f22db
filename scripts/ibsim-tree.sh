#!/usr/bin/env bash
# Builds ibsim 0.10 (the version Debian ships as ibsim-utils) from upstream's source with
# ibsim-patches/series applied, and prints the path of its `ibsim` binary; its umad2sim shim,
# libumad2sim.so, lies beside it. The patches keep the protocol between the two: Debian's shim
# works with this ibsim, and this shim with Debian's ibsim.
#
#   scripts/ibsim-tree.sh
#
# Why (ibsim-patches/*.patch say more): stock ibsim drops every TrapRepress, and an OpenSM whose
# sm_priority is raised waits for the TrapRepress of its trap 144 forever, so a handover by
# priority cannot be tested on it; and stock umad2sim never times a request out, so one request
# no one answers (between two SMs of an HA pair) stalls an OpenSM's sweep for good. The HA pair
# tests (tests/e2e_restart.rs) run on this build.
#
# Cached under ${CARGO_TARGET_DIR:-target}/ibsim/0.10-HASH/, HASH of the tarball, the patches and
# this recipe: built once, then reused. Needs make, gcc, patch, libibmad-dev and libibumad-dev
# (scripts/setup.sh installs them).
set -euo pipefail

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
TARGET=${CARGO_TARGET_DIR:-$REPO/target}
case $TARGET in /*) ;; *) TARGET=$REPO/$TARGET ;; esac
PATCHES=$REPO/ibsim-patches
TARBALL=$PATCHES/upstream/ibsim-0.10.tar.gz
SHA=2b17b241620c9c8997449eac5de22f756b75ce20ed0264c872edb5eb64645be0
# Bump when the build commands below change.
RECIPE=2

die() {
    echo "ibsim-tree: $*" >&2
    exit 1
}

[ "$(sha256sum <"$TARBALL" | cut -d' ' -f1)" = "$SHA" ] || die "$TARBALL: sha256 differs from $SHA"
for tool in make gcc patch; do
    command -v "$tool" >/dev/null || die "needs $tool (scripts/setup.sh installs it)"
done
for h in infiniband/mad.h infiniband/umad.h; do
    [ -f "/usr/include/$h" ] || die "needs /usr/include/$h (apt-get install libibmad-dev libibumad-dev)"
done
mapfile -t series < <(grep -v -e '^#' -e '^[[:space:]]*$' "$PATCHES/series")
hash=$( { echo "recipe $RECIPE"; cat "$TARBALL"; for p in "${series[@]}"; do cat "$PATCHES/$p"; done; } |
    sha256sum | cut -c1-12)
out=$TARGET/ibsim/0.10-$hash
if [ ! -x "$out/ibsim" ] || [ ! -f "$out/libumad2sim.so" ]; then
    mkdir -p "$TARGET/ibsim"
    work=$(mktemp -d "$TARGET/ibsim/build.XXXXXX")
    trap 'rm -rf "$work"' EXIT
    tar -xzf "$TARBALL" -C "$work"
    for p in "${series[@]}"; do
        patch -p1 --forward --batch -d "$work/ibsim-0.10" <"$PATCHES/$p" >"$work/patch.log" 2>&1 ||
            die "$p does not apply: $(tail -5 "$work/patch.log")"
    done
    { make -C "$work/ibsim-0.10/ibsim" ibsim && make -C "$work/ibsim-0.10/umad2sim" libumad2sim.so; } \
        >"$work/make.log" 2>&1 || die "make failed: $(tail -20 "$work/make.log")"
    # Into place in one rename; a build that ran beside this one and got there first wins.
    mkdir "$work/out"
    cp "$work/ibsim-0.10/ibsim/ibsim" "$work/ibsim-0.10/umad2sim/libumad2sim.so" "$work/out/"
    mv -T "$work/out" "$out" 2>/dev/null || [ -f "$out/libumad2sim.so" ] || die "cannot move the build to $out"
fi
echo "$out/ibsim"
