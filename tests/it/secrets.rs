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

/// Texts holding each newer secret shape, and the part that must not be
/// written anywhere.
const SHAPES: &[(&str, &str)] = &[
    ("slack xoxb-1234567890-abcdefGHIJklmn", "abcdefGHIJklmn"),
    ("gitlab glpat-AbCdEf0123456789_-xyZ", "AbCdEf0123456789"),
    (
        "npm npm_AbCdEfGhIjKlMnOpQrStUvWxYz0123456789",
        "AbCdEfGhIjKlMnOpQrStUvWxYz",
    ),
    (
        "hf hf_ZyXwVuTsRqPoNmLkJiHgFeDcBa01234567",
        "ZyXwVuTsRqPoNmLkJiHgFeDcBa",
    ),
    (
        "db postgres://app:pw-Secr3t-9@db.internal:5432/prod",
        "pw-Secr3t-9",
    ),
    (
        "csv bob,AKIAIOSFODNN7EXAMPLE,wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
        "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
    ),
    (
        "aws_secret_access_key = vJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
        "vJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
    ),
];

/// Ordinary text that stays as written.
const ORDINARY: &str = "from huggingface_hub import hf_hub_download; url = f\"postgresql://{user}:{password}@{host}/db\"";

#[test]
fn newer_secret_shapes_stay_out_of_session_files_the_log_o_files_and_recordings() {
    let env = Env::new();
    let lines: Vec<&str> = SHAPES.iter().map(|(text, _)| *text).collect();
    let printed = lines.join("\n");
    let script = serde_json::json!({ "turns": [
        { "text": "printing", "tool_calls": [
            { "name": "shell", "arguments": { "command": format!("cat <<'EOF'\n{printed}\nEOF") } },
        ] },
        { "text": format!("found:\n{printed}\n{ORDINARY}") },
    ] });
    let script: toml::Value = serde_json::from_value(script).unwrap();
    let script = env.write("script.toml", &toml::to_string(&script).unwrap());
    // The log records each hook's command: this one holds them all.
    let hook = toml::Value::String(format!("true {}", lines.join(" ")));
    env.write(
        "home/config.toml",
        &format!("[[hooks.SessionStart]]\ncommand = {hook}\n"),
    );
    let out_file = env.dir.path().join("answer.txt");
    let recording = env.dir.path().join("rec.toml");
    let out = env
        .cmd()
        .env("RUST_LOG", "cogni=debug")
        .args(["run", "--no-sandbox", "--script"])
        .arg(&script)
        .arg("--record")
        .arg(&recording)
        .arg("-o")
        .arg(&out_file)
        .arg(format!("look for secrets like {}", SHAPES[4].0))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let sessions: Vec<_> = std::fs::read_dir(env.dir.path().join("home/sessions"))
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .collect();
    assert_eq!(sessions.len(), 1);
    let written = std::fs::read_to_string(&out_file).unwrap();
    let files = [
        (
            "the session file",
            std::fs::read_to_string(&sessions[0]).unwrap(),
        ),
        (
            "the log",
            std::fs::read_to_string(env.dir.path().join("home/log/cogni.log")).unwrap(),
        ),
        ("-o", written.clone()),
        (
            "the recording",
            std::fs::read_to_string(&recording).unwrap(),
        ),
    ];
    for (what, text) in &files {
        for (_, secret) in SHAPES {
            assert!(!text.contains(secret), "{secret} in {what}:\n{text}");
        }
        assert!(text.contains("[REDACTED]"), "{what}:\n{text}");
    }
    assert!(files[1].1.contains("hook ran"), "{}", files[1].1);
    // What is around a secret stays, and so does ordinary code.
    assert!(
        written.contains("postgres://app:[REDACTED]@db.internal:5432/prod"),
        "{written}"
    );
    assert!(written.contains("bob,[REDACTED],[REDACTED]"), "{written}");
    assert!(written.ends_with(ORDINARY), "{written}");
}

#[test]
fn variables_that_look_secret_by_name_or_value_never_reach_commands() {
    let env = Env::new();
    let secret = [
        ("GH_PAT", "pat-value-1"),
        ("DATABASE_URL", "postgres://u:pw-value-2@db.internal/app"),
        ("MYSQL_PWD", "pwd-value-3"),
        ("NPM_CONFIG__AUTH", "auth-value-4"),
        ("AWS_SESSION_CREDS", "creds-value-5"),
        ("CI_READ", "ghp_abcdefghijklmnopqrstuvwxyz0123456789"),
    ];
    // bash keeps OLDPWD only when it names a directory.
    let old = env.dir.path().to_string_lossy().into_owned();
    let kept = [
        ("OLDPWD", old.as_str()),
        ("XDG_CONFIG_HOME", "/somewhere/config"),
        ("SSH_AUTH_SOCK", "/somewhere/agent.sock"),
        ("REPO_URL", "https://github.com/org/repo.git"),
    ];
    let run = run_script(
        &env,
        &[vec![shell("env; echo \"PWD is $PWD\"")]],
        &["--no-sandbox"],
        |cmd| {
            cmd.envs(secret.iter().chain(&kept).copied());
        },
    );
    let output = &run.calls[0].output;
    for (name, value) in secret {
        assert!(
            !output.contains(value),
            "{name} reached the command:\n{output}"
        );
    }
    for (name, value) in kept {
        assert!(
            output.contains(&format!("{name}={value}")),
            "{name} is missing:\n{output}"
        );
    }
    let work = env.work().canonicalize().unwrap();
    assert!(
        output.contains(&format!("PWD is {}", work.display())),
        "{output}"
    );
}
