#!/usr/bin/env bash
# A static cogni for Linux (x86_64-unknown-linux-musl), built with Debian's
# Rust, and checked: statically linked (no interpreter, no shared library
# needed), it runs the README's quick-start task on this machine, and again
# in an empty root: a container-like mount, PID, IPC, UTS and network
# namespace made by bwrap, whose / holds only the binary, the task's script
# and a static busybox as /bin/sh (the shell tool runs commands with it):
# no libc, no dynamic loader.
#
#   scripts/build_musl.sh [--profile release|dist]   build, then check
#   scripts/build_musl.sh --check BIN                check a binary built elsewhere
#                                                    (release.yml's, say)
#   --no-empty-root                                  skip the bwrap run
#
# The binary lands in ${CARGO_TARGET_DIR:-target/musl}/x86_64-unknown-linux-musl/PROFILE/cogni.
#
# Building needs Debian's packages rustc-web, cargo-web and rust-web-src
# (Rust 1.96 with the standard library's source), musl-tools and
# libunwind-14-dev; the empty-root run needs bubblewrap and busybox-static.
#
# Why more than `cargo build --target x86_64-unknown-linux-musl`: with
# rustup, `rustup target add x86_64-unknown-linux-musl` brings the target's
# standard library and, for its static ("self-contained") link, musl's crt
# objects and libc.a and LLVM's libunwind.a (release.yml builds that way).
# rustup cannot download targets on these machines, and Debian's rustc has
# no musl standard library, so std is built from source (-Zbuild-std, which
# RUSTC_BOOTSTRAP allows on a stable compiler) and the files rustc would
# take from the target's self-contained directory are gathered into one
# directory it is pointed at with `-L native=` (rustc looks for the crt
# objects on the native search path too):
#   - rcrt1.o crti.o crtn.o libc.a   musl's (musl-dev, with musl-tools)
#   - crtbeginS.o crtendS.o          gcc's
#   - libunwind.a                    LLVM's (libunwind-14-dev), plus one
#     object: Debian compiled it with _FORTIFY_SOURCE, so it calls glibc's
#     __fprintf_chk (in its debug logging), which musl does not have; the
#     shim forwards it to vfprintf.
# rustc then links with cc as a static PIE (-static-pie), as rustup's musl
# target does. ring's C code is compiled with musl-gcc.
set -euo pipefail

TARGET=x86_64-unknown-linux-musl
PROFILE=release
BIN=""
EMPTY_ROOT=1
while [ $# -gt 0 ]; do
    case "$1" in
        --profile) PROFILE="$2"; shift 2 ;;
        --check) BIN="$2"; shift 2 ;;
        --no-empty-root) EMPTY_ROOT=0; shift ;;
        *) echo "usage: $0 [--profile release|dist] [--check BIN] [--no-empty-root]" >&2; exit 2 ;;
    esac
done
if [ -n "$BIN" ]; then BIN=$(realpath "$BIN"); fi
cd "$(dirname "$0")/.."

fail() { echo "FAIL: $*" >&2; exit 1; }

if [ -z "$BIN" ]; then
    for f in /usr/bin/rustc /usr/bin/cargo /usr/bin/musl-gcc /usr/lib/llvm-14/lib/libunwind.a; do
        [ -e "$f" ] || fail "$f missing: apt-get install rustc-web cargo-web rust-web-src musl-tools libunwind-14-dev"
    done
    [ -d /usr/lib/rustlib/src/rust/library ] || fail "no standard library source: apt-get install rust-web-src"
    export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$PWD/target/musl}"
    CRT="$CARGO_TARGET_DIR/musl-crt"
    mkdir -p "$CRT"
    for f in rcrt1.o crt1.o Scrt1.o crti.o crtn.o libc.a; do
        ln -sf "/usr/lib/x86_64-linux-musl/$f" "$CRT/$f"
    done
    for f in crtbeginS.o crtendS.o crtbegin.o crtend.o; do
        ln -sf "$(gcc -print-file-name=$f)" "$CRT/$f"
    done
    cat >"$CRT/fortify_shim.c" <<'EOF'
#include <stdarg.h>
#include <stdio.h>
int __fprintf_chk(FILE *f, int flag, const char *fmt, ...) {
    va_list ap;
    (void)flag;
    va_start(ap, fmt);
    int r = vfprintf(f, fmt, ap);
    va_end(ap);
    return r;
}
EOF
    musl-gcc -O2 -fPIC -c "$CRT/fortify_shim.c" -o "$CRT/fortify_shim.o"
    rm -f "$CRT/libunwind.a"
    cp /usr/lib/llvm-14/lib/libunwind.a "$CRT/libunwind.a"
    chmod u+w "$CRT/libunwind.a"
    ar rs "$CRT/libunwind.a" "$CRT/fortify_shim.o"

    echo "== cargo build --profile $PROFILE --target $TARGET (std from source)"
    RUSTC=/usr/bin/rustc RUSTC_BOOTSTRAP=1 \
        CC_x86_64_unknown_linux_musl=musl-gcc \
        CARGO_TARGET_X86_64_UNKNOWN_LINUX_MUSL_RUSTFLAGS="-L native=$CRT" \
        /usr/bin/cargo build --locked -Zbuild-std=std,panic_abort \
        --target "$TARGET" --profile "$PROFILE" --bin cogni
    BIN="$CARGO_TARGET_DIR/$TARGET/$PROFILE/cogni"
fi

[ -x "$BIN" ] || fail "$BIN is not an executable"
echo "== static? $BIN"
file "$BIN"
file "$BIN" | grep -Eq 'static-pie linked|statically linked' || fail "file does not say static"
if readelf -lW "$BIN" | grep -q INTERP; then fail "has an interpreter (dynamic loader)"; fi
if readelf -dW "$BIN" | grep -q NEEDED; then fail "needs shared libraries"; fi
# glibc's ldd says "not a dynamic executable" for a static binary and
# "statically linked" for a static PIE; musl's ldd says neither.
ldd_out=$(ldd "$BIN" 2>&1 || true)
echo "ldd: $ldd_out"
grep -Eq 'not a dynamic executable|statically linked' <<<"$ldd_out" || fail "ldd: $ldd_out"
ls -l "$BIN"

echo "== --version"
version=$("$BIN" --version)
echo "$version"
grep -q -- "-linux-musl" <<<"$version" || fail "--version does not name a musl target"

TASK="Write hello to out.txt and show it"
echo "== the quick-start task, on this machine"
work=$(mktemp -d)
home=$(mktemp -d)
trap 'rm -rf "$work" "$home"' EXIT
COGNI_HOME="$home" "$BIN" run -C "$work" --script examples/hello.toml "$TASK"
[ "$(cat "$work/out.txt")" = hello ] || fail "out.txt: $(cat "$work/out.txt" 2>&1)"

if [ "$EMPTY_ROOT" = 1 ]; then
    echo "== the quick-start task, in an empty root (bwrap; static busybox as /bin/sh)"
    BUSYBOX=$(command -v busybox || true)
    command -v bwrap >/dev/null || fail "no bwrap: apt-get install bubblewrap (or --no-empty-root)"
    [ -n "$BUSYBOX" ] || fail "no busybox: apt-get install busybox-static (or --no-empty-root)"
    file -L "$BUSYBOX" | grep -Eq 'static-pie linked|statically linked' || fail "$BUSYBOX is not static"
    root=$(mktemp -d)
    trap 'rm -rf "$work" "$home" "$root"' EXIT
    mkdir -p "$root/bin" "$root/work" "$root/tmp" "$root/proc" "$root/dev"
    cp "$BIN" "$root/cogni"
    cp examples/hello.toml "$root/hello.toml"
    cp "$BUSYBOX" "$root/bin/busybox"
    for applet in $("$BUSYBOX" --list); do
        [ "$applet" = busybox ] || ln -s busybox "$root/bin/$applet"
    done
    echo "the root holds (besides busybox's applet links in /bin):"
    (cd "$root" && find . -not -type l -not -type d | sort)
    bwrap --bind "$root" / --proc /proc --dev /dev --tmpfs /tmp \
        --unshare-pid --unshare-ipc --unshare-uts --unshare-net --die-with-parent \
        --clearenv --setenv PATH /bin --setenv SHELL /bin/sh \
        --setenv HOME /tmp --setenv COGNI_HOME /tmp/cogni-home --chdir / \
        /cogni run -C /work --script /hello.toml "$TASK"
    [ "$(cat "$root/work/out.txt")" = hello ] || fail "empty root: out.txt: $(cat "$root/work/out.txt" 2>&1)"
    if find "$root" -name 'ld-*.so*' -o -name 'libc.so*' -o -name 'libc-*' | grep -q .; then
        fail "the root holds a libc or a loader"
    fi
fi
echo "== ok: $BIN is static and ran the quick-start task"
