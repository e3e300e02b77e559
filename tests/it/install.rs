//! `install.sh` against a local directory of release archives (a file://
//! base URL): the archive for this platform is verified and installed,
//! and a wrong checksum installs nothing.

use std::path::Path;
use std::process::Command;

/// The target install.sh picks on this machine.
fn target() -> String {
    let os = if cfg!(target_os = "macos") {
        "apple-darwin"
    } else {
        "unknown-linux-musl"
    };
    format!("{}-{os}", std::env::consts::ARCH)
}

/// A release directory holding `cogni-TARGET.tar.gz` (a stand-in binary)
/// and SHA256SUMS with `sum` for it (`None`: the right one).
fn release(dir: &Path, sum: Option<&str>) {
    let stage = dir.join("stage");
    std::fs::create_dir_all(&stage).unwrap();
    std::fs::write(
        stage.join("cogni"),
        "#!/bin/sh\necho 'cogni 9.9.9 (stand-in)'\n",
    )
    .unwrap();
    let archive = format!("cogni-{}.tar.gz", target());
    let status = Command::new("tar")
        .args(["-czf"])
        .arg(dir.join(&archive))
        .arg("-C")
        .arg(&stage)
        .arg("cogni")
        .status()
        .unwrap();
    assert!(status.success());
    let out = Command::new("sha256sum")
        .arg(&archive)
        .current_dir(dir)
        .output()
        .unwrap();
    let line = String::from_utf8(out.stdout).unwrap();
    let line = match sum {
        Some(sum) => format!("{sum}  {archive}\n"),
        None => line,
    };
    std::fs::write(dir.join("SHA256SUMS"), line).unwrap();
}

fn install(base: &Path, prefix: &Path) -> std::process::Output {
    Command::new("sh")
        .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("install.sh"))
        .arg("--base-url")
        .arg(format!("file://{}", base.display()))
        .arg("--prefix")
        .arg(prefix)
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", prefix)
        .output()
        .unwrap()
}

#[test]
fn install_sh_verifies_the_archive_and_installs_the_binary() {
    let tmp = tempfile::tempdir().unwrap();
    let (base, prefix) = (tmp.path().join("release"), tmp.path().join("prefix"));
    std::fs::create_dir_all(&base).unwrap();
    release(&base, None);
    let out = install(&base, &prefix);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let installed = prefix.join("bin/cogni");
    let version = Command::new(&installed).arg("--version").output().unwrap();
    assert_eq!(
        String::from_utf8_lossy(&version.stdout),
        "cogni 9.9.9 (stand-in)\n"
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("add ") && stdout.contains("to your PATH"),
        "{stdout}"
    );
}

#[test]
fn a_wrong_checksum_installs_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let (base, prefix) = (tmp.path().join("release"), tmp.path().join("prefix"));
    std::fs::create_dir_all(&base).unwrap();
    release(&base, Some(&"0".repeat(64)));
    let out = install(&base, &prefix);
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("checksum mismatch") && stderr.contains("nothing was installed"),
        "{stderr}"
    );
    assert!(!prefix.join("bin").exists());

    // No sum for the archive at all: refused too.
    std::fs::write(base.join("SHA256SUMS"), "").unwrap();
    let out = install(&base, &prefix);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("has no sum"));
    // No archive for this platform: a clear error.
    std::fs::remove_file(base.join(format!("cogni-{}.tar.gz", target()))).unwrap();
    let out = install(&base, &prefix);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("cannot download"));
    assert!(!prefix.join("bin").exists());
}
