#!/usr/bin/env bash
# Builds the Debian package dfsssp-rs_*.deb from this tree with dpkg-buildpackage (debian/), against
# the installed opensm/libopensm-dev, and prints its path. Usage: scripts/build-deb.sh [OUTDIR]
# (default target/debian).
#
# It builds in a copy of the tree (git's tracked and untracked-but-not-ignored files, their
# modification times kept), because dpkg-buildpackage writes its results into the parent
# directory of the source tree. The copy sits at a fixed place in the cargo target directory
# (CARGO_TARGET_DIR, default target/), which the build shares: a second run rebuilds only what
# changed.
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$PWD
out=$(mkdir -p "${1:-target/debian}" && cd "${1:-target/debian}" && pwd)
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$repo/target}

need=()
for p in debhelper dpkg-dev; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || need+=("$p")
done
if ((${#need[@]})); then
    echo "build-deb: installing ${need[*]}" >&2
    SUDO=""
    [ "$(id -u)" -eq 0 ] || SUDO="sudo"
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${need[@]}" >/dev/null
fi

top=$CARGO_TARGET_DIR/deb-build
src=$top/dfsssp-rs
rm -rf "$top"
mkdir -p "$src"
if [ -d .git ] || [ -f .git ]; then
    git ls-files -z --cached --others --exclude-standard |
        tar --null -T - --ignore-failed-read -cf - | tar -xf - -C "$src"
else
    tar --exclude=./target --exclude=./.git -cf - . | tar -xf - -C "$src"
fi

# -b: binary packages only; -us -uc: unsigned (a local build).
(cd "$src" && dpkg-buildpackage -b -us -uc >"$out/build.log" 2>&1) || {
    tail -n 40 "$out/build.log" >&2
    echo "build-deb: dpkg-buildpackage failed; the whole log: $out/build.log" >&2
    exit 1
}
rm -f "$out"/dfsssp-rs_*.deb "$out"/dfsssp-rs-dbgsym_*.*deb "$out"/dfsssp-rs_*.buildinfo "$out"/dfsssp-rs_*.changes
mv "$top"/dfsssp-rs_* "$top"/dfsssp-rs-dbgsym_* "$out"/ 2>/dev/null || true
rm -rf "$top"
ls "$out"/dfsssp-rs_*.deb
