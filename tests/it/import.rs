//! `cogni import codex` and `cogni import claude` through the real binary,
//! with HOME, CODEX_HOME and COGNI_HOME in a temp dir: what they print,
//! what `--write` writes (and refuses to), their errors, and that cogni
//! loads what they wrote.

use crate::cli::{stderr_of, stdout_of, Env};
use std::path::{Path, PathBuf};
use std::process::Output;

const FIXTURES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/import");

fn fixture(name: &str) -> String {
    std::fs::read_to_string(Path::new(FIXTURES).join(name)).unwrap()
}

/// `text` written at `path`, parents created.
fn put(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

/// HOME and COGNI_HOME (one directory, as `Env` sets them).
fn home(env: &Env) -> PathBuf {
    env.dir.path().join("home")
}

/// The user config file `--write` writes.
fn user_config(env: &Env) -> PathBuf {
    home(env).join("config.toml")
}

fn text(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap()
}

/// `cogni ARGS` in the workspace, with `vars` set besides the Env's.
fn cogni(env: &Env, args: &[&str], vars: &[(&str, &Path)]) -> Output {
    let mut cmd = env.cmd();
    cmd.args(args);
    for (name, value) in vars {
        cmd.env(name, value);
    }
    cmd.output().unwrap()
}

/// It succeeded: its stdout.
fn done(out: &Output) -> String {
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(out));
    stdout_of(out)
}

/// It failed as a usage or config error, saying each of `needles`.
fn refused(out: &Output, needles: &[&str]) {
    let err = stderr_of(out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    for needle in needles {
        assert!(err.contains(needle), "stderr lacks {needle:?}: {err}");
    }
}

/// The Codex fixture as `dir/config.toml`, with the prompt file it names.
fn codex_home(dir: &Path) {
    put(&dir.join("config.toml"), &fixture("codex/config.toml"));
    put(&dir.join("prompts/base.md"), "You are careful.\n");
}

/// Claude Code's user files in the fake home.
fn claude_home(env: &Env) {
    let home = home(env);
    for (name, path) in [
        ("user-settings.json", ".claude/settings.json"),
        ("claude.json", ".claude.json"),
    ] {
        put(&home.join(path), &fixture(&format!("claude/{name}")));
    }
}

/// A project with Claude Code's project files, in the workspace.
fn claude_project(env: &Env) {
    for (name, path) in [
        ("project-settings.json", ".claude/settings.json"),
        ("project-settings.local.json", ".claude/settings.local.json"),
        ("mcp.json", ".mcp.json"),
    ] {
        put(&env.work().join(path), &fixture(&format!("claude/{name}")));
    }
}

/// cogni loads the user config it finds, as a session would (`cogni
/// models --offline` loads every layer, the chosen profile included, and
/// asks nobody).
fn assert_cogni_loads_it(env: &Env, args: &[&str]) {
    let out = env
        .cmd()
        .args(["models", "--offline"])
        .args(args)
        .env("OPENAI_API_KEY", "sk-test")
        .env("ANTHROPIC_API_KEY", "sk-ant-test")
        .output()
        .unwrap();
    done(&out);
}

#[test]
fn import_codex_prints_cogni_toml_from_codex_home_and_reports_the_rest() {
    let env = Env::new();
    let codex = env.dir.path().join("codex");
    codex_home(&codex);
    let out = cogni(&env, &["import", "codex"], &[("CODEX_HOME", &codex)]);
    let text = done(&out);
    assert!(text.contains(&codex.join("config.toml").display().to_string()));
    for line in [
        "model = \"gpt-5-codex\"",
        "[profiles.fast]",
        "[mcp_servers.github]",
        "#   notify: ",
    ] {
        assert!(text.contains(line), "{line}: {text}");
    }
    assert!(stderr_of(&out).contains("not imported"));
    assert!(!user_config(&env).exists());
}

#[test]
fn import_codex_write_writes_the_user_config_once_and_cogni_loads_it() {
    let env = Env::new();
    // No CODEX_HOME: ~/.codex.
    codex_home(&home(&env).join(".codex"));
    let config = user_config(&env);
    let out = cogni(&env, &["import", "codex", "--write"], &[]);
    assert!(done(&out).contains(&config.display().to_string()));
    let written = text(&config);
    assert!(written.contains("reasoning_effort = \"high\""));
    assert_cogni_loads_it(&env, &[]);
    assert_cogni_loads_it(&env, &["--profile", "local"]);

    // A second write refuses to replace it, and says how.
    std::fs::write(&config, "model = \"mine\"\n").unwrap();
    let out = cogni(&env, &["import", "codex", "--write"], &[]);
    refused(&out, &[&config.display().to_string(), "--force"]);
    assert_eq!(text(&config), "model = \"mine\"\n");
    done(&cogni(
        &env,
        &["import", "codex", "--write", "--force"],
        &[],
    ));
    assert_eq!(text(&config), written);

    // --to writes elsewhere; --to without --write is a usage error.
    let other = env.dir.path().join("other/cogni.toml");
    let to = other.to_str().unwrap();
    done(&cogni(
        &env,
        &["import", "codex", "--write", "--to", to],
        &[],
    ));
    assert_eq!(text(&other), written);
    refused(
        &cogni(&env, &["import", "codex", "--to", to], &[]),
        &["--write"],
    );
}

#[test]
fn import_codex_errors_name_the_file_and_the_fix() {
    let env = Env::new();
    let missing = env.dir.path().join("nowhere/config.toml");
    let missing = missing.to_str().unwrap();
    let out = cogni(&env, &["import", "codex", "--from", missing], &[]);
    refused(&out, &[missing, "--from"]);

    let bad = env.write("bad.toml", "model = \"gpt\nsandbox_mode = 3\n");
    let bad = bad.to_str().unwrap();
    let out = cogni(&env, &["import", "codex", "--from", bad], &[]);
    refused(&out, &[bad, "invalid TOML"]);
    assert!(stdout_of(&out).is_empty());
}

#[test]
fn import_claude_reads_your_settings_and_claude_json() {
    let env = Env::new();
    claude_home(&env);
    claude_project(&env);
    let text = done(&cogni(&env, &["import", "claude"], &[]));
    assert!(
        text.contains("[[hooks.PreToolUse]]\nmatcher = \"shell\""),
        "{text}"
    );
    assert!(text.contains("[mcp_servers.sentry]"), "{text}");
    assert!(!text.contains("ghp_"), "{text}");
    // The project's files in the working directory are not read.
    assert!(!text.contains("postgres"), "{text}");

    done(&cogni(&env, &["import", "claude", "--write"], &[]));
    assert!(user_config(&env).is_file());
    assert_cogni_loads_it(&env, &[]);
}

#[test]
fn import_claude_from_another_directory_and_claude_config_dir() {
    let env = Env::new();
    let dir = env.dir.path().join("claude-config");
    put(
        &dir.join("settings.json"),
        r#"{"model": "claude-haiku-4-5", "permissions": {"deny": ["Bash(curl:*)"]}}"#,
    );
    let from = ["import", "claude", "--from", dir.to_str().unwrap()];
    for args in [&from[..], &from[..2]] {
        let text = done(&cogni(&env, args, &[("CLAUDE_CONFIG_DIR", &dir)]));
        assert!(text.contains("model = \"claude-haiku-4-5\""), "{text}");
        assert!(text.contains("kind = \"guardrail\""), "{text}");
    }
}

#[test]
fn import_claude_project_writes_only_the_projects_cogni_toml() {
    let env = Env::new();
    claude_project(&env);
    let text = done(&cogni(&env, &["import", "claude", "--project", "."], &[]));
    assert!(text.contains("[mcp_servers.postgres]"), "{text}");
    assert!(text.contains("cogni trust"), "{text}");

    let out = cogni(
        &env,
        &["import", "claude", "--project", ".", "--write"],
        &[],
    );
    done(&out);
    let err = stderr_of(&out);
    assert!(
        err.contains("cogni trust") && err.contains("mcp_servers.postgres"),
        "{err}"
    );
    assert!(env.work().join("cogni.toml").is_file());
    assert!(!user_config(&env).exists());

    // Never into your config: --to is refused with --project ...
    let mine = user_config(&env);
    let args = ["import", "claude", "--project", ".", "--write", "--force"];
    let out = cogni(
        &env,
        &[&args[..], &["--to", mine.to_str().unwrap()]].concat(),
        &[],
    );
    refused(&out, &["--to"]);
    // ... and so is naming the project's .claude as yours.
    let out = cogni(
        &env,
        &["import", "claude", "--from", ".claude", "--write"],
        &[],
    );
    refused(&out, &["--project"]);
    assert!(!mine.exists());
}

#[test]
fn import_claude_project_write_is_refused_where_it_would_run_at_once() {
    let env = Env::new();
    claude_project(&env);
    done(&cogni(&env, &["trust"], &[]));
    let out = cogni(
        &env,
        &["import", "claude", "--project", ".", "--write"],
        &[],
    );
    refused(&out, &["is trusted", "nothing was written"]);
    assert!(!env.work().join("cogni.toml").exists());
}

#[test]
fn import_claude_errors_name_the_file_and_the_fix() {
    let env = Env::new();
    let out = cogni(&env, &["import", "claude"], &[]);
    refused(&out, &[".claude/settings.json", "--from"]);

    let settings = home(&env).join(".claude/settings.json");
    put(&settings, "{\"model\": \"sonnet\",}");
    let out = cogni(&env, &["import", "claude"], &[]);
    refused(&out, &[&settings.display().to_string(), "invalid JSON"]);

    let out = cogni(&env, &["import", "claude", "--project", "missing-dir"], &[]);
    refused(&out, &["missing-dir"]);
}
