#!/bin/sh
# Install cogni from a release: picks the archive for this platform,
# verifies its SHA-256 sum, and installs the binary.
#
#   curl -fsSL https://github.com/cogni-dev/cogni/releases/latest/download/install.sh | sh
#   sh install.sh [--version TAG] [--prefix DIR] [--base-url URL] [--repo OWNER/NAME]
#
# --prefix DIR     install to DIR/bin (default: ~/.local)
# --version TAG    a release tag such as v0.2.0 (default: the latest)
# --base-url URL   where the archives are (default: the GitHub release of
#                  --repo); a file:// URL installs from a local directory
# --repo O/N       the GitHub repository (default: cogni-dev/cogni)
#
# Nothing is installed unless the archive's sum matches the release's
# SHA256SUMS. Needs curl (or wget), tar, and sha256sum (or shasum).
set -eu

repo="cogni-dev/cogni"
version=""
prefix="${HOME:-}/.local"
base_url=""

die() {
  echo "install.sh: $*" >&2
  exit 1
}

while [ $# -gt 0 ]; do
  case "$1" in
    --version) [ $# -ge 2 ] || die "--version needs a tag"; version="$2"; shift 2 ;;
    --prefix) [ $# -ge 2 ] || die "--prefix needs a directory"; prefix="$2"; shift 2 ;;
    --base-url) [ $# -ge 2 ] || die "--base-url needs a URL"; base_url="$2"; shift 2 ;;
    --repo) [ $# -ge 2 ] || die "--repo needs OWNER/NAME"; repo="$2"; shift 2 ;;
    -h|--help) sed -n '2,16p' "$0"; exit 0 ;;
    *) die "unknown option $1 (see --help)" ;;
  esac
done

case "$(uname -s)" in
  Linux) os="unknown-linux-musl" ;;
  Darwin) os="apple-darwin" ;;
  *) die "no release for $(uname -s): on Windows run install.ps1; elsewhere build from source (README)" ;;
esac
case "$(uname -m)" in
  x86_64|amd64) arch="x86_64" ;;
  aarch64|arm64) arch="aarch64" ;;
  *) die "no release for the $(uname -m) processor: build from source (README)" ;;
esac
target="$arch-$os"
archive="cogni-$target.tar.gz"

if [ -z "$base_url" ]; then
  if [ -n "$version" ]; then
    base_url="https://github.com/$repo/releases/download/$version"
  else
    base_url="https://github.com/$repo/releases/latest/download"
  fi
fi

fetch() { # URL FILE
  if command -v curl >/dev/null 2>&1; then
    curl --proto '=https,file' --tlsv1.2 -fsSL --connect-timeout 15 --max-time 300 -o "$2" "$1"
  elif command -v wget >/dev/null 2>&1; then
    case "$1" in
      file://*) cp "${1#file://}" "$2" ;;
      *) wget -q -T 60 -O "$2" "$1" ;;
    esac
  else
    die "needs curl or wget"
  fi
}

sha256() {
  if command -v sha256sum >/dev/null 2>&1; then
    sha256sum "$1" | cut -d' ' -f1
  elif command -v shasum >/dev/null 2>&1; then
    shasum -a 256 "$1" | cut -d' ' -f1
  else
    die "needs sha256sum or shasum to verify the download"
  fi
}

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT INT TERM

echo "cogni: downloading $archive from $base_url"
fetch "$base_url/$archive" "$tmp/$archive" || die "cannot download $base_url/$archive"
fetch "$base_url/SHA256SUMS" "$tmp/SHA256SUMS" || die "cannot download $base_url/SHA256SUMS"

expected=$(awk -v name="$archive" '$2 == name || $2 == "*" name { print $1 }' "$tmp/SHA256SUMS")
[ -n "$expected" ] || die "SHA256SUMS has no sum for $archive"
actual=$(sha256 "$tmp/$archive")
[ "$actual" = "$expected" ] || die "checksum mismatch for $archive: expected $expected, got $actual; nothing was installed"

mkdir "$tmp/x"
tar -xzf "$tmp/$archive" -C "$tmp/x" || die "cannot unpack $archive"
[ -f "$tmp/x/cogni" ] || die "$archive holds no cogni binary"

mkdir -p "$prefix/bin" || die "cannot create $prefix/bin"
# Copy next to the target, then rename: an interrupted install never
# leaves a half-written binary.
cp "$tmp/x/cogni" "$prefix/bin/.cogni.new"
chmod 755 "$prefix/bin/.cogni.new"
mv -f "$prefix/bin/.cogni.new" "$prefix/bin/cogni"
echo "cogni: installed $prefix/bin/cogni ($("$prefix/bin/cogni" --version 2>/dev/null || echo "$target"))"
case ":${PATH:-}:" in
  *":$prefix/bin:"*) ;;
  *) echo "cogni: add $prefix/bin to your PATH" ;;
esac
