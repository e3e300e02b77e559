//! Secrets and private files through the real binary: what sandboxed
//! commands get of cogni's environment, what cogni writes to disk with
//! secrets in it, and the modes of the files only the user should read.

use crate::cli::Env;
use crate::sandbox::{backend, run_script, shell};
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

fn mode(path: &Path) -> u32 {
    std::fs::metadata(path)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
        .permissions()
        .mode()
        & 0o777
}

#[test]
fn the_log_file_and_its_directory_are_private_even_when_made_looser_before() {
    for made_before in [false, true] {
        let env = Env::new();
        let log = env.dir.path().join("home/log");
        if made_before {
            std::fs::create_dir_all(&log).unwrap();
            std::fs::set_permissions(&log, std::fs::Permissions::from_mode(0o755)).unwrap();
            std::fs::write(log.join("cogni.log"), "earlier\n").unwrap();
            std::fs::set_permissions(
                log.join("cogni.log"),
                std::fs::Permissions::from_mode(0o644),
            )
            .unwrap();
        }
        let out = env
            .run_script("[[turns]]\ntext = \"done\"\n", "hi")
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(0), "{out:?}");
        assert_eq!(mode(&log), 0o700, "made before: {made_before}");
        assert_eq!(
            mode(&log.join("cogni.log")),
            0o600,
            "made before: {made_before}"
        );
        let text = std::fs::read_to_string(log.join("cogni.log")).unwrap();
        assert!(text.contains("turn completed"), "{text}");
        assert_eq!(text.starts_with("earlier\n"), made_before, "appended to");
    }
}

#[test]
fn the_sandbox_temp_dir_is_private() {
    if !backend("the_sandbox_temp_dir_is_private") {
        return;
    }
    let env = Env::new();
    let run = run_script(
        &env,
        &[vec![shell("stat -c 'mode %a' \"$TMPDIR\"")]],
        &["--sandbox", "workspace-write"],
        |_| {},
    );
    assert!(
        run.calls[0].output.contains("mode 700"),
        "{}",
        run.calls[0].output
    );
}
