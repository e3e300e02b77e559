#!/bin/sh
# Build cogni and the crates' unit tests for Windows (x86_64-pc-windows-gnu,
# with Debian's rustc-web, rust-web-src and mingw-w64) and run them under
# Wine: `cogni --version`, the quick-start task through cmd.exe, and every
# unit test that is not Unix's. Used by .ci/run; see docs/sandbox.md#windows.
#
#   scripts/wine.sh            # build, then run everything
#   scripts/wine.sh --check    # type-check only
set -eu
cd "$(dirname "$0")/.."
target=x86_64-pc-windows-gnu
cross() {
    RUSTC=/usr/bin/rustc RUSTC_BOOTSTRAP=1 /usr/bin/cargo "$@" \
        -Zbuild-std=std,panic_abort --target "$target" --locked
}
if [ "${1:-}" = --check ]; then
    cross check --quiet --workspace
    exit 0
fi
wine=$(command -v wine || command -v wine64)
out=target/$target/debug
# One build: the unit tests, and cogni.exe itself (built for the
# integration suite, which is Unix's and empty here) with the same
# features, so the dependencies are compiled once.
tests=$(cross test --quiet --no-run --workspace --lib --bins --test it --message-format=json |
    sed -n 's/.*"executable":"\([^"]*\)".*/\1/p' | grep '/deps/')

# Wine 8 has no ProcessPrng, which Rust's std imports: a stand-in DLL,
# beside every executable run (test scaffolding, never shipped).
for dir in "$out" "$out/deps"; do
    x86_64-w64-mingw32-gcc -shared -O2 -o "$dir/bcryptprimitives.dll" \
        scripts/wine/bcryptprimitives.c scripts/wine/bcryptprimitives.def -lbcrypt
done

scratch=$(mktemp -d)
# wineserver outlives the programs it ran: end it with the prefix.
trap 'WINEPREFIX="$scratch/prefix" wineserver -k 2>/dev/null; sleep 1; rm -rf "$scratch"' EXIT
export WINEPREFIX="$scratch/prefix" WINEDEBUG=-all WINEDLLOVERRIDES="bcryptprimitives=n,b"
"$wine" wineboot --init >/dev/null 2>&1 || true

echo "wine: cogni --version"
version=$("$wine" "$out/cogni.exe" --version | tr -d '\r')
echo "  $version"
case $version in
*"($target, debug profile, commit "*) ;;
*) echo "wine: unexpected version line: $version" >&2; exit 1 ;;
esac

echo "wine: no sandbox, said and refused"
if "$wine" "$out/cogni.exe" sandbox check > "$scratch/check.out" 2>&1; then
    cat "$scratch/check.out"; echo "wine: sandbox check passed without a backend" >&2; exit 1
fi
grep -q 'no sandbox backend for Windows' "$scratch/check.out" || { cat "$scratch/check.out"; exit 1; }
if "$wine" "$out/cogni.exe" run --script examples/hello-cmd.toml "x" > "$scratch/refused.out" 2>&1; then
    cat "$scratch/refused.out"; echo "wine: a sandboxed run started without a backend" >&2; exit 1
fi
grep -q -- '--no-sandbox' "$scratch/refused.out" || { cat "$scratch/refused.out"; exit 1; }

echo "wine: the quick-start task through cmd.exe"
mkdir -p "$scratch/home" "$scratch/work"
printf 'shell = "cmd.exe"\n' > "$scratch/home/config.toml"
COGNI_HOME=$(winepath -w "$scratch/home" 2>/dev/null) \
    "$wine" "$out/cogni.exe" run --no-sandbox --approval never \
    -C "$(winepath -w "$scratch/work" 2>/dev/null)" \
    --script examples/hello-cmd.toml "Write hello to out.txt and show it" \
    > "$scratch/run.out" 2>&1 || { cat "$scratch/run.out"; exit 1; }
tr -d '\r' < "$scratch/work/out.txt" | grep -qx 'hello' ||
    { cat "$scratch/run.out"; echo "wine: out.txt does not hold hello" >&2; exit 1; }
grep -q 'contains `hello`' "$scratch/run.out" || { cat "$scratch/run.out"; exit 1; }

failed=0
for exe in $tests; do
    name=$(basename "$exe")
    if "$wine" "$exe" --test-threads 2 -q > "$scratch/test.out" 2>&1; then
        echo "wine: $name: $(grep -a 'test result' "$scratch/test.out" | tr -d '\r')"
    else
        cat "$scratch/test.out"
        echo "wine: $name FAILED" >&2
        failed=1
    fi
done
exit $failed
