#!/usr/bin/env bash
# Builds an OpenSM from source into a private prefix and the dfsssp-rs plug-in against its headers,
# for the end-to-end tests on OpenSM versions other than Debian's packaged one.
#
#   scripts/opensm-tree.sh VARIANT...      VARIANT: 3.3.24 | 3.3.24-patched | 3.3.23-patched
#
# Prints one line per variant, "VARIANT PREFIX". PREFIX holds sbin/opensm, lib/ (OpenSM's libraries
# and libdfsssp_rs.so built against include/infiniband/), so a run needs only
# `LD_LIBRARY_PATH=PREFIX/lib PREFIX/sbin/opensm`. "-patched" applies opensm-patches/series.
#
# Cached: PREFIX is named by a hash of the source tarball, the patches applied and the build recipe,
# under ${CARGO_TARGET_DIR:-target}/opensm/; an unchanged tree is built once and then reused. The
# plug-in is rebuilt by cargo when the code or the headers change (a target dir per set of
# headers, .../opensm/cargo-HASH, the first copied to start the others).
#
# Sources (sha256-checked):
#   3.3.24  upstream's release tarball: $OPENSM_3_3_24_TARBALL, else the copy in
#           opensm-patches/upstream/ (CI needs no network for it), else ../shared/opensm/ or
#           /work/shared/opensm/.
#   3.3.23  Debian's source (opensm_3.3.23.orig.tar.gz): $OPENSM_3_3_23_TARBALL, else
#           opensm-patches/upstream/, ../src-opensm/ or /work/src-opensm/, else
#           `apt-get source --download-only opensm` (needs a deb-src entry in apt's sources).
# Needs autoconf automake libtool-bin flex bison make patch libibumad-dev (SETUP_OPENSM_BUILD=1
# scripts/setup.sh installs them; scripts/test.sh does that).
set -euo pipefail

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
TARGET=${CARGO_TARGET_DIR:-$REPO/target}
case $TARGET in /*) ;; *) TARGET=$REPO/$TARGET ;; esac
ROOT=$TARGET/opensm
PATCHES=$REPO/opensm-patches
# Bump when the build commands below change: the hash then names new prefixes.
RECIPE=2
SUBDIRS="complib libopensm libvendor opensm include"

SHA_3_3_24=211cf9e38a40b3330ff127985a26cba5d4e4203a66968ab02a495d45956c703c
SHA_3_3_23=50773bfe7b66d3c70f4e572381904029023d3291f09ec4a9108219abd7430d3c

die() {
    echo "opensm-tree: $*" >&2
    exit 1
}

# tarball VERSION: the path of the checked source tarball of that OpenSM version.
tarball() {
    local version=$1 want candidates=() c
    case $version in
    3.3.24)
        want=$SHA_3_3_24
        candidates=("${OPENSM_3_3_24_TARBALL:-}" "$REPO/opensm-patches/upstream/opensm-3.3.24.tar.gz"
            "$REPO/../shared/opensm/opensm-3.3.24.tar.gz"
            /work/shared/opensm/opensm-3.3.24.tar.gz)
        ;;
    3.3.23)
        want=$SHA_3_3_23
        candidates=("${OPENSM_3_3_23_TARBALL:-}"
            "$REPO/opensm-patches/upstream/opensm_3.3.23.orig.tar.gz"
            "$REPO/../src-opensm/opensm_3.3.23.orig.tar.gz"
            /work/src-opensm/opensm_3.3.23.orig.tar.gz "$ROOT/src/opensm_3.3.23.orig.tar.gz")
        ;;
    *) die "unknown OpenSM version $version" ;;
    esac
    for c in "${candidates[@]}"; do
        [ -n "$c" ] && [ -f "$c" ] || continue
        [ "$(sha256sum <"$c" | cut -d' ' -f1)" = "$want" ] || die "$c: sha256 differs from $want"
        echo "$c"
        return
    done
    if [ "$version" = 3.3.23 ]; then
        # Debian's source package: the .orig tarball arrives; the Debian diff may 404 (apt then
        # exits non-zero with the tarball in place), so judge by the file.
        mkdir -p "$ROOT/src"
        (cd "$ROOT/src" && apt-get source --download-only opensm=3.3.23-2 >apt-source.log 2>&1) || true
        c=$ROOT/src/opensm_3.3.23.orig.tar.gz
        [ -f "$c" ] || die "cannot get Debian's opensm 3.3.23 source (add a deb-src entry to apt's \
sources, or set OPENSM_3_3_23_TARBALL); apt said: $(tail -3 "$ROOT/src/apt-source.log")"
        [ "$(sha256sum <"$c" | cut -d' ' -f1)" = "$want" ] || die "$c: sha256 differs from $want"
        echo "$c"
        return
    fi
    die "OpenSM $version source not found: set OPENSM_${version//./_}_TARBALL (tried: ${candidates[*]:1})"
}

# The patches of the series, in order.
series() {
    grep -v -e '^#' -e '^[[:space:]]*$' "$PATCHES/series" | while read -r p; do
        echo "$PATCHES/$p"
    done
}

# build_tree VARIANT: builds OpenSM (if not cached) and prints its prefix.
build_tree() {
    local variant=$1 version patched=0 src key prefix work log p t0
    version=${variant%-patched}
    [ "$version" != "$variant" ] && patched=1
    src=$(tarball "$version")
    key=$( {
        echo "recipe $RECIPE $variant"
        sha256sum <"$src"
        if ((patched)); then
            series | while read -r p; do sha256sum <"$p"; done
        fi
    } | sha256sum | cut -c1-12)
    prefix=$ROOT/$variant-$key
    if [ -f "$prefix/.complete" ]; then
        echo "opensm-tree: $variant: cached in $prefix" >&2
        echo "$prefix"
        return
    fi
    work=$ROOT/build-$variant
    log=$ROOT/build-$variant.log
    rm -rf "$work" "$prefix"
    mkdir -p "$work"
    tar -xzf "$src" -C "$work" --strip-components=1
    if ((patched)); then
        while read -r p; do
            # --fuzz=0: a patch that needs fuzz to apply does not apply cleanly.
            patch -d "$work" -p1 --fuzz=0 --batch --quiet <"$p" ||
                die "$(basename "$p") does not apply cleanly to OpenSM $version"
        done < <(series)
    fi
    echo "opensm-tree: $variant: building into $prefix (log: $log)" >&2
    t0=$SECONDS
    if ! (
        cd "$work"
        [ -x configure ] || ./autogen.sh
        ./configure --prefix="$prefix" --disable-static --disable-dependency-tracking
        # OpenSM, its libraries and headers, in the order of the top Makefile's SUBDIRS; not
        # osmtest, which the tests do not use.
        for d in $SUBDIRS; do
            make -C "$d" -j"$(nproc)"
            make -C "$d" install
        done
    ) >"$log" 2>&1; then
        tail -40 "$log" >&2
        die "building OpenSM $variant failed (log: $log)"
    fi
    touch "$prefix/.complete"
    rm -rf "$work"
    # Earlier builds of this variant (other sources, patches or recipe) are stale now.
    for p in "$ROOT/$variant"-????????????; do
        [ "$p" = "$prefix" ] || rm -rf "$p"
    done
    echo "opensm-tree: $variant: built in $((SECONDS - t0)) s" >&2
    echo "$prefix"
}

# build_plugin PREFIX: the plug-in as packaged, against PREFIX's headers, into PREFIX/lib.
build_plugin() {
    local prefix=$1 t0=$SECONDS headers
    # The headers are copied to a directory named by their hash: trees with the same headers
    # (3.3.24 with and without the patches) give cargo the same OPENSM_INCLUDE_DIR, so it does
    # not rebuild the plug-in for the second one. The prefix itself is left out of the hash:
    # osm_config.h names files under it (default config paths), which the plug-in never uses.
    headers=$ROOT/headers-$(cd "$prefix/include/infiniband" &&
        find . -type f | LC_ALL=C sort | while read -r f; do
            echo "$f"
            sed "s|$prefix|@PREFIX@|g" "$f"
        done | sha256sum | cut -c1-12)
    if [ ! -d "$headers" ]; then
        rm -rf "$headers.tmp"
        cp -R "$prefix/include/infiniband" "$headers.tmp"
        mv "$headers.tmp" "$headers"
    fi
    # One cargo target dir per header set, so switching between trees rebuilds nothing; a new
    # one starts as a copy of an existing one (the dependencies are built once).
    local target=$ROOT/cargo-${headers##*headers-} seed
    if [ ! -d "$target" ]; then
        seed=$(ls -dt "$ROOT"/cargo-????????????  2>/dev/null | head -1 || true)
        rm -rf "$target.tmp"
        if [ -n "$seed" ]; then cp -a "$seed" "$target.tmp"; else mkdir "$target.tmp"; fi
        mv "$target.tmp" "$target"
    fi
    (
        cd "$REPO"
        OPENSM_INCLUDE_DIR=$headers CARGO_TARGET_DIR=$target \
            cargo build --release --lib --no-default-features --features opensm --quiet
    ) || die "building the plug-in against $prefix failed"
    cp "$target/release/libdfsssp_rs.so" "$prefix/lib/libdfsssp_rs.so.tmp"
    mv "$prefix/lib/libdfsssp_rs.so.tmp" "$prefix/lib/libdfsssp_rs.so"
    echo "opensm-tree: plug-in against $prefix in $((SECONDS - t0)) s" >&2
}

(($#)) || die "usage: $0 VARIANT... (3.3.24, 3.3.24-patched, 3.3.23-patched)"
mkdir -p "$ROOT"
# One build at a time per target dir (two test runs may start together).
exec 9>"$ROOT/.lock"
flock 9
for variant in "$@"; do
    case $variant in
    3.3.24 | 3.3.24-patched | 3.3.23-patched) ;;
    *) die "unknown variant $variant (3.3.24, 3.3.24-patched, 3.3.23-patched)" ;;
    esac
    prefix=$(build_tree "$variant")
    build_plugin "$prefix"
    echo "$variant $prefix"
done
