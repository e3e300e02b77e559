//! What `cogni --version` says besides the version: the target, the
//! profile and the commit the binary was built from.

use std::path::Path;
use std::process::Command;

fn main() {
    let target = std::env::var("TARGET").unwrap_or_default();
    println!("cargo:rustc-env=COGNI_BUILD_TARGET={target}");
    // OUT_DIR is target/[TRIPLE/]PROFILE/build/cogni-HASH/out: the profile
    // by its own name (`dist`, not only `release`).
    let out_dir = std::env::var("OUT_DIR").unwrap_or_default();
    let profile = Path::new(&out_dir)
        .ancestors()
        .nth(3)
        .and_then(Path::file_name)
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| std::env::var("PROFILE").unwrap_or_default());
    println!("cargo:rustc-env=COGNI_BUILD_PROFILE={profile}");
    println!("cargo:rustc-env=COGNI_BUILD_COMMIT={}", commit());
}

/// The commit of the checkout, `unknown` outside one (a source archive);
/// rebuilt when HEAD moves.
fn commit() -> String {
    let git = |args: &[&str]| {
        Command::new("git")
            .args(args)
            .output()
            .ok()
            .filter(|o| o.status.success())
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
    };
    let Some(commit) = git(&["rev-parse", "--short=12", "HEAD"]) else {
        return "unknown".into();
    };
    if let Some(dir) = git(&["rev-parse", "--git-dir"]) {
        println!("cargo:rerun-if-changed={dir}/HEAD");
    }
    if let (Some(common), Some(head)) = (
        git(&["rev-parse", "--git-common-dir"]),
        git(&["symbolic-ref", "-q", "HEAD"]),
    ) {
        println!("cargo:rerun-if-changed={common}/{head}");
        println!("cargo:rerun-if-changed={common}/packed-refs");
    }
    commit
}
