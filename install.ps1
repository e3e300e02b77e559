# Install cogni on Windows from a release: downloads the x86_64 archive,
# verifies its SHA-256 sum against the release's SHA256SUMS, and installs
# cogni.exe to %LOCALAPPDATA%\cogni\bin (or -Prefix), adding it to the
# user's PATH.
#
#   irm https://github.com/cogni-dev/cogni/releases/latest/download/install.ps1 | iex
#   .\install.ps1 [-Version v0.2.0] [-Prefix DIR] [-BaseUrl URL] [-Repo OWNER/NAME]
param(
    [string]$Version = "",
    [string]$Prefix = "$env:LOCALAPPDATA\cogni",
    [string]$BaseUrl = "",
    [string]$Repo = "cogni-dev/cogni"
)
$ErrorActionPreference = "Stop"

if (-not [Environment]::Is64BitOperatingSystem) {
    throw "install.ps1: cogni is built for 64-bit Windows only"
}
$target = "x86_64-pc-windows-msvc"
$archive = "cogni-$target.zip"
if (-not $BaseUrl) {
    if ($Version) { $BaseUrl = "https://github.com/$Repo/releases/download/$Version" }
    else { $BaseUrl = "https://github.com/$Repo/releases/latest/download" }
}

$tmp = Join-Path ([IO.Path]::GetTempPath()) ("cogni-install-" + [Guid]::NewGuid())
New-Item -ItemType Directory -Path $tmp | Out-Null
try {
    Write-Host "cogni: downloading $archive from $BaseUrl"
    Invoke-WebRequest -UseBasicParsing -TimeoutSec 300 -Uri "$BaseUrl/$archive" -OutFile "$tmp\$archive"
    Invoke-WebRequest -UseBasicParsing -TimeoutSec 60 -Uri "$BaseUrl/SHA256SUMS" -OutFile "$tmp\SHA256SUMS"
    $expected = (Get-Content "$tmp\SHA256SUMS" | Where-Object { ($_ -split '\s+')[1] -in @($archive, "*$archive") } | ForEach-Object { ($_ -split '\s+')[0] }) | Select-Object -First 1
    if (-not $expected) { throw "install.ps1: SHA256SUMS has no sum for $archive" }
    $actual = (Get-FileHash -Algorithm SHA256 "$tmp\$archive").Hash.ToLower()
    if ($actual -ne $expected.ToLower()) {
        throw "install.ps1: checksum mismatch for ${archive}: expected $expected, got $actual; nothing was installed"
    }
    Expand-Archive -Path "$tmp\$archive" -DestinationPath "$tmp\x"
    if (-not (Test-Path "$tmp\x\cogni.exe")) { throw "install.ps1: $archive holds no cogni.exe" }
    $bin = Join-Path $Prefix "bin"
    New-Item -ItemType Directory -Force -Path $bin | Out-Null
    # Copy next to the target, then move: an interrupted install never
    # leaves a half-written binary.
    Copy-Item "$tmp\x\cogni.exe" "$bin\cogni.exe.new" -Force
    Move-Item "$bin\cogni.exe.new" "$bin\cogni.exe" -Force
    $path = [Environment]::GetEnvironmentVariable("Path", "User")
    if (-not ($path -split ';' | Where-Object { $_ -eq $bin })) {
        [Environment]::SetEnvironmentVariable("Path", "$path;$bin", "User")
        Write-Host "cogni: added $bin to your PATH (open a new terminal)"
    }
    Write-Host "cogni: installed $bin\cogni.exe"
} finally {
    Remove-Item -Recurse -Force $tmp
}
