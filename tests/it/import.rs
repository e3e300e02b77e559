//! `cogni import codex` and `cogni import claude` through the real binary,
//! with HOME, CODEX_HOME and COGNI_HOME in a temp dir: what they print,
//! what `--write` writes (and refuses to), their errors, and that cogni
//! loads what they wrote.

use crate::cli::{stderr_of, stdout_of, Env};
use std::path::{Path, PathBuf};

const FIXTURES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/import");

fn fixture(name: &str) -> String {
    std::fs::read_to_string(Path::new(FIXTURES).join(name)).unwrap()
}

/// `text` written at `path`, parents created.
fn put(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

fn home(env: &Env) -> PathBuf {
    env.dir.path().join("home")
}

/// The Codex fixture as `dir/config.toml`, with the prompt file it names.
fn codex_home(dir: &Path) {
    put(&dir.join("config.toml"), &fixture("codex/config.toml"));
    put(&dir.join("prompts/base.md"), "You are careful.\n");
}

/// Claude Code's user files in the fake home.
fn claude_home(env: &Env) {
    let home = home(env);
    put(
        &home.join(".claude/settings.json"),
        &fixture("claude/user-settings.json"),
    );
    put(&home.join(".claude.json"), &fixture("claude/claude.json"));
}

/// A project with Claude Code's project files, in the workspace.
fn claude_project(env: &Env) {
    let work = env.work();
    put(
        &work.join(".claude/settings.json"),
        &fixture("claude/project-settings.json"),
    );
    put(
        &work.join(".claude/settings.local.json"),
        &fixture("claude/project-settings.local.json"),
    );
    put(&work.join(".mcp.json"), &fixture("claude/mcp.json"));
}

/// cogni loads the user config it finds, as a session would (`cogni
/// models --offline` loads every layer and asks nobody).
fn assert_cogni_loads_it(env: &Env) {
    let out = env
        .cmd()
        .args(["models", "--offline"])
        .env("OPENAI_API_KEY", "sk-test")
        .env("ANTHROPIC_API_KEY", "sk-ant-test")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
}

#[test]
fn import_codex_prints_cogni_toml_from_codex_home_and_reports_the_rest() {
    let env = Env::new();
    let codex = env.dir.path().join("codex");
    codex_home(&codex);
    let out = env
        .cmd()
        .args(["import", "codex"])
        .env("CODEX_HOME", &codex)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    let text = stdout_of(&out);
    assert!(text.contains(&codex.join("config.toml").display().to_string()));
    assert!(text.contains("model = \"gpt-5-codex\""), "{text}");
    assert!(text.contains("[profiles.fast]"), "{text}");
    assert!(text.contains("[mcp_servers.github]"), "{text}");
    assert!(text.contains("#   notify: "), "{text}");
    assert!(stderr_of(&out).contains("not imported"));
    // Nothing was written.
    assert!(!home(&env).join("config.toml").exists());
}

#[test]
fn import_codex_write_writes_the_user_config_once_and_cogni_loads_it() {
    let env = Env::new();
    // No CODEX_HOME: ~/.codex.
    codex_home(&home(&env).join(".codex"));
    let out = env
        .cmd()
        .args(["import", "codex", "--write"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    let config = home(&env).join("config.toml");
    assert!(stdout_of(&out).contains(&config.display().to_string()));
    let written = std::fs::read_to_string(&config).unwrap();
    assert!(written.contains("reasoning_effort = \"high\""));
    assert_cogni_loads_it(&env);
    // The profile it chose is one cogni knows.
    let out = env
        .cmd()
        .args(["models", "--offline", "--profile", "local"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));

    // A second write refuses to replace it, and says how.
    std::fs::write(&config, "model = \"mine\"\n").unwrap();
    let out = env
        .cmd()
        .args(["import", "codex", "--write"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = stderr_of(&out);
    assert!(
        err.contains(&config.display().to_string()) && err.contains("--force"),
        "{err}"
    );
    assert_eq!(
        std::fs::read_to_string(&config).unwrap(),
        "model = \"mine\"\n"
    );
    let out = env
        .cmd()
        .args(["import", "codex", "--write", "--force"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    assert_eq!(std::fs::read_to_string(&config).unwrap(), written);

    // --to writes elsewhere; --to without --write is a usage error.
    let other = env.dir.path().join("other/cogni.toml");
    let out = env
        .cmd()
        .args(["import", "codex", "--write", "--to"])
        .arg(&other)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    assert_eq!(std::fs::read_to_string(&other).unwrap(), written);
    let out = env
        .cmd()
        .args(["import", "codex", "--to"])
        .arg(&other)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn import_codex_errors_name_the_file_and_the_fix() {
    let env = Env::new();
    let missing = env.dir.path().join("nowhere/config.toml");
    let out = env
        .cmd()
        .args(["import", "codex", "--from"])
        .arg(&missing)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = stderr_of(&out);
    assert!(
        err.contains(&missing.display().to_string()) && err.contains("--from"),
        "{err}"
    );

    let bad = env.write("bad.toml", "model = \"gpt\nsandbox_mode = 3\n");
    let out = env
        .cmd()
        .args(["import", "codex", "--from"])
        .arg(&bad)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = stderr_of(&out);
    assert!(
        err.contains(&bad.display().to_string()) && err.contains("invalid TOML"),
        "{err}"
    );
    assert!(stdout_of(&out).is_empty());
}

#[test]
fn import_claude_reads_your_settings_and_claude_json() {
    let env = Env::new();
    claude_home(&env);
    claude_project(&env);
    let out = env.cmd().args(["import", "claude"]).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    let text = stdout_of(&out);
    assert!(
        text.contains("[[hooks.PreToolUse]]\nmatcher = \"shell\""),
        "{text}"
    );
    assert!(text.contains("[mcp_servers.sentry]"), "{text}");
    assert!(!text.contains("ghp_"), "{text}");
    // The project's files in the working directory are not read.
    assert!(!text.contains("postgres"), "{text}");

    let out = env
        .cmd()
        .args(["import", "claude", "--write"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    assert!(home(&env).join("config.toml").is_file());
    assert_cogni_loads_it(&env);
}

#[test]
fn import_claude_from_another_directory_and_claude_config_dir() {
    let env = Env::new();
    let dir = env.dir.path().join("claude-config");
    put(
        &dir.join("settings.json"),
        r#"{"model": "claude-haiku-4-5", "permissions": {"deny": ["Bash(curl:*)"]}}"#,
    );
    for args in [
        vec!["import", "claude", "--from", dir.to_str().unwrap()],
        vec!["import", "claude"],
    ] {
        let out = env
            .cmd()
            .args(&args)
            .env("CLAUDE_CONFIG_DIR", &dir)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
        let text = stdout_of(&out);
        assert!(text.contains("model = \"claude-haiku-4-5\""), "{text}");
        assert!(text.contains("kind = \"guardrail\""), "{text}");
    }
}

#[test]
fn import_claude_project_writes_only_the_projects_cogni_toml() {
    let env = Env::new();
    claude_project(&env);
    let out = env
        .cmd()
        .args(["import", "claude", "--project", "."])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    let text = stdout_of(&out);
    assert!(text.contains("[mcp_servers.postgres]"), "{text}");
    assert!(text.contains("cogni trust"), "{text}");

    let out = env
        .cmd()
        .args(["import", "claude", "--project", ".", "--write"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    let err = stderr_of(&out);
    assert!(
        err.contains("cogni trust") && err.contains("mcp_servers.postgres"),
        "{err}"
    );
    assert!(env.work().join("cogni.toml").is_file());
    assert!(!home(&env).join("config.toml").exists());

    // Never into your config: --to is refused with --project.
    let out = env
        .cmd()
        .args([
            "import",
            "claude",
            "--project",
            ".",
            "--write",
            "--force",
            "--to",
        ])
        .arg(home(&env).join("config.toml"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(!home(&env).join("config.toml").exists());
    // Nor by naming the project's .claude as yours.
    let out = env
        .cmd()
        .args(["import", "claude", "--from", ".claude", "--write"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr_of(&out).contains("--project"), "{}", stderr_of(&out));
    assert!(!home(&env).join("config.toml").exists());
}

#[test]
fn import_claude_project_write_is_refused_where_it_would_run_at_once() {
    let env = Env::new();
    claude_project(&env);
    let out = env.cmd().arg("trust").output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    let out = env
        .cmd()
        .args(["import", "claude", "--project", ".", "--write"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr_of(&out).contains("is trusted"),
        "{}",
        stderr_of(&out)
    );
    assert!(!env.work().join("cogni.toml").exists());
}

#[test]
fn import_claude_errors_name_the_file_and_the_fix() {
    let env = Env::new();
    let out = env.cmd().args(["import", "claude"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = stderr_of(&out);
    assert!(
        err.contains(".claude/settings.json") && err.contains("--from"),
        "{err}"
    );

    let settings = home(&env).join(".claude/settings.json");
    put(&settings, "{\"model\": \"sonnet\",}");
    let out = env.cmd().args(["import", "claude"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = stderr_of(&out);
    assert!(
        err.contains(&settings.display().to_string()) && err.contains("invalid JSON"),
        "{err}"
    );

    let out = env
        .cmd()
        .args(["import", "claude", "--project", "missing-dir"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr_of(&out).contains("missing-dir"));
}
