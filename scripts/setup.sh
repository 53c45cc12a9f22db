#!/usr/bin/env bash
# Installs what dfsssp-rs needs on a Debian (bookworm) machine: the OpenSM stack from Debian's
# packages and a Rust toolchain. Safe to run again; it only installs what is missing.
set -euo pipefail

# `time` gives /usr/bin/time (demo and benches), python3 the benches' reports, curl and
# ca-certificates fetch rustup, gcc/libc6-dev build the C wrappers and link; libibmad-dev, make
# and patch build the patched ibsim of the handover test (scripts/ibsim-tree.sh).
PACKAGES=(opensm libopensm-dev libibumad-dev ibsim-utils libumad2sim0 infiniband-diags ibutils
          libclang-dev clang pkg-config time python3 curl ca-certificates gcc libc6-dev
          libibmad-dev make patch)
# With SETUP_OPENSM_BUILD=1 (scripts/test.sh): what building OpenSM from source takes
# (scripts/opensm-tree.sh).
if [ -n "${SETUP_OPENSM_BUILD:-}" ]; then
    PACKAGES+=(autoconf automake libtool-bin flex bison)
fi

missing=()
for p in "${PACKAGES[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
    echo "setup: installing ${missing[*]}" >&2
    SUDO=""
    [ "$(id -u)" -eq 0 ] || SUDO="sudo"
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}" >/dev/null
fi

if ! command -v cargo >/dev/null 2>&1; then
    if [ -x "$HOME/.cargo/bin/cargo" ]; then
        export PATH="$HOME/.cargo/bin:$PATH"
    else
        echo "setup: installing a Rust toolchain with rustup" >&2
        # rustup-init straight from static.rust-lang.org (where the toolchains come from too):
        # sh.rustup.rs is only a redirect, and not every network that reaches one reaches both.
        # (It must be called rustup-init: rustup picks its behaviour from its own name.)
        tmp=$(mktemp -d)
        curl --proto '=https' --tlsv1.2 -sSf -o "$tmp/rustup-init" \
            "https://static.rust-lang.org/rustup/dist/$(uname -m)-unknown-linux-gnu/rustup-init"
        chmod +x "$tmp/rustup-init"
        "$tmp/rustup-init" -y --profile minimal -c rustfmt -c clippy >&2
        rm -rf "$tmp"
        export PATH="$HOME/.cargo/bin:$PATH"
    fi
fi
# test.sh runs cargo fmt and cargo clippy: a toolchain installed with rustup's minimal profile
# lacks them.
for tool in rustfmt clippy; do
    if ! cargo "${tool/rustfmt/fmt}" --version >/dev/null 2>&1 && command -v rustup >/dev/null; then
        echo "setup: adding the $tool component" >&2
        rustup component add "$tool" >&2
    fi
done
