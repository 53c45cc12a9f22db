#!/usr/bin/env bash
# The Debian package end to end: builds it (scripts/build-deb.sh), runs lintian (errors and
# warnings fail), installs it with apt, and checks that the stock opensm in ibsim routes a 4x4x4
# torus with dfsssp-rs from the packaged example's config lines alone (no LD_LIBRARY_PATH: the
# plug-in is found where the package put it), deadlock-free by ibdmchk. It checks that on an
# opensm upgrade apt holds opensm back or removes the package (simulated), then removes the
# package and checks that the same configuration leaves OpenSM routing with its built-in nue (the
# example's fallback; deadlock-free by ibdmchk too), saying why, without crashing.
#
# Installs and removes the package dfsssp-rs system-wide: root (or sudo) on a machine where it
# is not installed. scripts/test.sh runs it. With DEB=FILE it tests that package instead of
# building one, and needs no toolchain: scripts/package-chroot-test.sh runs it so on a clean
# Debian system, where `apt-get install` has to pull opensm by itself.
set -euo pipefail
cd "$(dirname "$0")/.."
t0=$(date +%s.%N)
DEB=${DEB:-}
[ -n "$DEB" ] || source scripts/setup.sh
source scripts/ibsim-lib.sh

SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
apt_get() { $SUDO env DEBIAN_FRONTEND=noninteractive apt-get -y -qq "$@"; }
has() { dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q "ok installed"; }
fail() { echo "package-test: FAIL: $*" >&2; exit 1; }
elapsed() { awk -v a="$1" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f s", b - a }'; }

# present_plugins: the libdfsssp_rs.so files the dynamic loader could find (its cache may also
# name a removed one: no ldconfig runs when the package goes, being no shared library).
present_plugins() {
    { ldconfig -p | awk '/libdfsssp_rs\.so / { print $NF }'
      ls /lib/*/libdfsssp_rs.so /usr/lib/*/libdfsssp_rs.so /lib/libdfsssp_rs.so /usr/lib/libdfsssp_rs.so; } 2>/dev/null |
        sort -u | while read -r f; do [ -e "$f" ] && echo "$f"; done
}

# A plug-in already on the loader's path would make both halves of the test meaningless.
if has dfsssp-rs; then
    fail "the package dfsssp-rs is installed; this test installs and removes it: remove it first"
fi
[ -z "$(present_plugins)" ] || fail "a libdfsssp_rs.so is already on the loader's path: $(present_plugins)"

WORK=$(mktemp -d /tmp/dfsssp-pkgtest.XXXXXX)
export IBSIM_SOCKNAME="dfsssp-pkgtest-$$"
installed=0
cleanup() {
    ibsim_stop
    if [ "$installed" = 1 ]; then apt_get remove dfsssp-rs >/dev/null || true; fi
}
trap cleanup EXIT

# lint DEB: lintian's errors and warnings fail the test; the overrides are shown with the rest.
lint() {
    local rc=0
    lintian --fail-on error,warning --info "$1" >"$WORK/lintian.out" 2>&1 || rc=$?
    # (--show-overrides would make the overridden tags count for the exit status: a second run
    # shows them.)
    lintian --show-overrides "$1" 2>&1 | grep -v -e '^N:' -e 'running with root privileges' |
        sed 's/^/   /' >&2 || true
    [ "$rc" = 0 ] || fail "lintian reports errors or warnings ($WORK/lintian.out)"
}

# run_opensm DIR CONF: one OpenSM sweep on the running ibsim with the config lines of CONF (plus
# where to put its dump files), the way an admin runs it: no LD_LIBRARY_PATH. Only the
# simulator's umad shim is preloaded. Exit status in DIR/rc.
run_opensm() {
    local dir=$1 conf=$2
    mkdir -p "$dir"
    { cat "$conf"; echo "dump_files_dir $dir"; } >"$dir/osm.conf"
    local rc=0
    (cd "$dir" && env -u LD_LIBRARY_PATH OSM_TMP_DIR="$dir" OSM_CACHE_DIR="$dir" \
        LD_PRELOAD="$UMAD2SIM" timeout -k 10 300 \
        opensm --once -F "$dir/osm.conf" -f "$dir/osm.log" -D 0x47 -d 0 >"$dir/opensm.out" 2>&1) || rc=$?
    echo "$rc" >"$dir/rc"
}

# ibdmchk_clean DIR: ibdmchk over OpenSM's dumps (and the plug-in's path-SL dump when there is one)
# reports every CA-to-CA path and no credit loop.
ibdmchk_clean() {
    local dir=$1
    local chk=(-s "$dir/opensm-subnet.lst" -f "$dir/opensm.fdbs" -m "$dir/opensm.mcfdbs")
    [ -f "$dir/opensm-path-sl.dump" ] && chk+=(-c "$dir/opensm-path-sl.dump")
    # ibdmchk may segfault while exiting, after its report: judge the report.
    (cd "$dir" && timeout 300 ibdmchk "${chk[@]}" >"$dir/ibdmchk.out" 2>&1) 2>/dev/null || true
    grep -qi "no credit loops found" "$dir/ibdmchk.out" || fail "ibdmchk: credit loops or no verdict ($dir/ibdmchk.out)"
    ! grep -q -E "^-E- .*(no path|Fail|missing|Unassigned|lid not found)" "$dir/ibdmchk.out" ||
        fail "ibdmchk: path errors ($dir/ibdmchk.out)"
    sed -n 's/^-I- Scanned:\([0-9]*\) CA to CA paths.*/\1 CA-to-CA paths/p' "$dir/ibdmchk.out"
}

if [ -n "$DEB" ]; then
    deb=$(realpath "$DEB")
    build_time="not built here"
else
    echo "== building the package" >&2
    t=$(date +%s.%N)
    deb=$(scripts/build-deb.sh "$WORK/deb")
    build_time=$(elapsed "$t")
    echo "   $deb ($build_time)" >&2
fi

if [ -n "$DEB" ] && ! has lintian; then
    echo "== lintian: not installed, skipped (the package was linted where it was built)" >&2
else
    echo "== lintian" >&2
    has lintian || apt_get install lintian >/dev/null
    lint "$deb"
fi

echo "== apt-get install $deb" >&2
t=$(date +%s.%N)
installed=1
apt_get install "$deb" >"$WORK/apt-install.out" 2>&1 || { cat "$WORK/apt-install.out" >&2; fail "apt-get install"; }
install_time=$(elapsed "$t")
example=/usr/share/doc/dfsssp-rs/examples/opensm.conf
lib=$(dpkg -L dfsssp-rs | grep '/libdfsssp_rs\.so$') || fail "the package installs no libdfsssp_rs.so"
# The failure-injection test hooks (cargo feature test-hooks) are not in the packaged plug-in.
! grep -q DFSSSP_RS_INJECT_FAILURE "$lib" || fail "$lib carries the test hooks (built with test-hooks)"
# OpenSM dlopen()s "libdfsssp_rs.so" by name: the dynamic loader must find it without help (its
# own system directories, which need no ldconfig run).
ldso=$(ldd /usr/sbin/opensm | awk '/ld-linux/ { print $1 }')
"$ldso" --help | grep -qF "  $(dirname "$lib") (system search path)" ||
    fail "$lib is not in a directory of the dynamic loader's search path ($ldso --help)"
[ -f "$example" ] || fail "no $example"
[ -f /usr/share/man/man1/dfsssp-rs.1.gz ] || fail "no manual page dfsssp-rs(1)"
[ "$(command -v dfsssp-rs)" = /usr/bin/dfsssp-rs ] || fail "dfsssp-rs is not /usr/bin/dfsssp-rs"
ver=$(dpkg-query -W -f='${Version}' dfsssp-rs)
dep=$(dpkg-query -W -f='${Depends}' dfsssp-rs)
osm=$(dpkg-query -W -f='${Version}' opensm)
grep -qF "opensm (= $osm)" <<<"$dep" || fail "Depends '$dep' does not pin the installed opensm $osm"
echo "   dfsssp-rs $ver, Depends: $dep; plug-in $lib" >&2
if [ -n "$DEB" ]; then
    echo "== the test's own tools: ibsim, its umad shim, ibdmchk" >&2
    apt_get install ibsim-utils libumad2sim0 ibutils >/dev/null
fi

# An OpenSM upgrade must not leave the plug-in installed beside an opensm that refuses it. A
# stand-in newer opensm in a local repository, apt simulating against it alone (its own source
# list and package lists; the system's apt state is not touched): `upgrade` must keep opensm
# back, `full-upgrade` must remove dfsssp-rs.
repo=$WORK/repo
mkdir -p "$WORK/fake-opensm/DEBIAN" "$repo" "$WORK/apt-lists/partial"
cat >"$WORK/fake-opensm/DEBIAN/control" <<CONTROL
Package: opensm
Version: $osm.1
Architecture: $(dpkg --print-architecture)
Maintainer: package-test <root@localhost>
Description: stand-in for a newer opensm (apt simulation only)
CONTROL
dpkg-deb --build "$WORK/fake-opensm" "$repo/opensm-newer.deb" >/dev/null
{ dpkg-deb -f "$repo/opensm-newer.deb"
  echo "Filename: ./opensm-newer.deb"
  echo "Size: $(stat -c %s "$repo/opensm-newer.deb")"
  echo "SHA256: $(sha256sum "$repo/opensm-newer.deb" | cut -d' ' -f1)"
  echo; } >"$repo/Packages"
echo "deb [trusted=yes] file:$repo ./" >"$WORK/sources.list"
apt_sim=(-o Dir::Etc::SourceList="$WORK/sources.list" -o Dir::Etc::SourceParts=/nonexistent
         -o Dir::State::Lists="$WORK/apt-lists" -o Dir::Cache::pkgcache= -o Dir::Cache::srcpkgcache=)
$SUDO apt-get "${apt_sim[@]}" update >"$WORK/apt-sim.out" 2>&1 || { cat "$WORK/apt-sim.out" >&2; fail "apt-get update (local repository)"; }
$SUDO apt-get "${apt_sim[@]}" -s upgrade >"$WORK/apt-upgrade.out" 2>&1 || true
grep -A1 "kept back" "$WORK/apt-upgrade.out" | grep -q "opensm" && ! grep -q "^Inst opensm" "$WORK/apt-upgrade.out" ||
    fail "apt upgrade does not keep opensm $osm.1 back ($WORK/apt-upgrade.out)"
$SUDO apt-get "${apt_sim[@]}" -s full-upgrade >"$WORK/apt-full-upgrade.out" 2>&1 || true
grep -q "^Remv dfsssp-rs" "$WORK/apt-full-upgrade.out" ||
    fail "apt full-upgrade to opensm $osm.1 keeps dfsssp-rs ($WORK/apt-full-upgrade.out)"
echo "   opensm $osm.1 offered (simulated): apt upgrade keeps opensm back, full-upgrade removes dfsssp-rs" >&2

/usr/bin/dfsssp-rs generate torus:4x4x4,2 -o "$WORK/torus.net" 2>/dev/null
ibsim_start "$WORK/torus.net" "$WORK"
echo "== opensm with the packaged config ($example)" >&2
cp "$example" "$WORK/example-opensm.conf" # the package's removal takes it away
run_opensm "$WORK/installed" "$WORK/example-opensm.conf"
ibsim_stop
d=$WORK/installed
[ "$(cat "$d/rc")" = 0 ] || fail "opensm exited with status $(cat "$d/rc") ($d)"
! grep -q "Failed to open event plugin" "$d/osm.log" || fail "$(grep -m1 "Failed to open event plugin" "$d/osm.log")"
used=$(engine_used "$d/osm.log")
[ "$used" = dfsssp-rs ] || fail "OpenSM routed with '$used', not dfsssp-rs ($d/osm.log)"
layers=$(grep -m1 -o "layers used: [0-9]* of [0-9]*" "$d/osm.log" || echo "layers used: 1")
checked=$(ibdmchk_clean "$d")
echo "   routed by dfsssp-rs, $layers, ibdmchk: $checked, no credit loops" >&2

echo "== apt-get remove dfsssp-rs" >&2
apt_get remove dfsssp-rs >"$WORK/apt-remove.out" 2>&1 || { cat "$WORK/apt-remove.out" >&2; fail "apt-get remove"; }
installed=0
[ -z "$(present_plugins)" ] || fail "still on the loader's path after removal: $(present_plugins)"
! has dfsssp-rs || fail "dfsssp-rs still installed"

echo "== opensm with the same config, package removed" >&2
ibsim_start "$WORK/torus.net" "$WORK"
run_opensm "$WORK/removed" "$WORK/example-opensm.conf"
ibsim_stop
d=$WORK/removed
[ "$(cat "$d/rc")" = 0 ] || fail "opensm exited with status $(cat "$d/rc") without the plug-in ($d)"
grep -q 'Failed to open event plugin "libdfsssp_rs.so"' "$d/osm.log" || fail "OpenSM does not say the plug-in is missing ($d/osm.log)"
grep -q "cannot find or setup routing engine 'dfsssp-rs'" "$d/osm.log" ||
    fail "OpenSM does not say dfsssp-rs is unavailable ($d/osm.log)"
used=$(engine_used "$d/osm.log")
[ "$used" = nue ] || fail "OpenSM routed with '$used', not the configured fallback nue ($d/osm.log)"
checked=$(ibdmchk_clean "$d")
echo "   OpenSM logs: $(grep -m1 -o 'Failed to open event plugin.*' "$d/osm.log" | cut -c1-100)" >&2
echo "   routed by nue (the configured fallback), ibdmchk: $checked, no credit loops" >&2

rm -rf "$WORK"
echo "package-test: OK (package build $build_time, install $install_time, total $(elapsed "$t0"))" >&2
