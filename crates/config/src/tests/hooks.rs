//! `[[hooks.EVENT]]` across the layers, and trust.

use super::*;

fn commands(config: &Config) -> Vec<String> {
    config
        .session
        .hooks
        .iter()
        .map(|h| format!("{} {}", h.event.name(), h.command))
        .collect()
}

fn write_layers(d: &Dirs) -> PathBuf {
    std::fs::write(
        d.home.join("config.toml"),
        "[[hooks.PreToolUse]]\nmatcher = \"shell\"\ncommand = \"home-check\"\n[[hooks.Stop]]\ncommand = \"home-stop\"\n",
    )
    .unwrap();
    std::fs::write(
        d.cwd.join("cogni.toml"),
        "model = \"m\"\n[[hooks.PreToolUse]]\ncommand = \"project-check\"\n[[hooks.SessionStart]]\ncommand = \"project-start\"\n",
    )
    .unwrap();
    let explicit = d.home.join("extra.toml");
    std::fs::write(
        &explicit,
        "[[hooks.PreToolUse]]\ncommand = \"flag-check\"\n",
    )
    .unwrap();
    explicit
}

fn load_explicit(d: &Dirs, explicit: &Path) -> Config {
    load(Sources {
        home: d.home.clone(),
        cwd: d.cwd.clone(),
        explicit: Some(explicit.to_path_buf()),
        flags: ConfigFile::default(),
        env: &env_of(&[("OPENAI_API_KEY", "k")]),
    })
    .unwrap()
}

#[test]
fn an_untrusted_projects_hooks_are_ignored_with_one_warning() {
    let d = dirs();
    let explicit = write_layers(&d);
    let config = load_explicit(&d, &explicit);
    // The user's and --config's hooks apply; the project's do not, but
    // the rest of its file does.
    assert_eq!(
        commands(&config),
        [
            "PreToolUse home-check",
            "Stop home-stop",
            "PreToolUse flag-check"
        ]
    );
    assert_eq!(config.session.model.as_deref(), Some("m"));
    assert_eq!(config.warnings.len(), 1, "{:?}", config.warnings);
    let warning = &config.warnings[0];
    for needle in [
        "not trusted",
        "allowlist",
        "hooks.SessionStart",
        "hooks.PreToolUse",
        "cogni trust",
    ] {
        assert!(warning.contains(needle), "{needle}: {warning}");
    }
}

#[test]
fn a_trusted_projects_hooks_run_after_the_users_and_before_configs() {
    let d = dirs();
    let explicit = write_layers(&d);
    trust_cwd(&d);
    let config = load_explicit(&d, &explicit);
    assert_eq!(
        commands(&config),
        [
            "PreToolUse home-check",
            "Stop home-stop",
            "SessionStart project-start",
            "PreToolUse project-check",
            "PreToolUse flag-check",
        ]
    );
    assert!(config.warnings.is_empty(), "{:?}", config.warnings);
}

#[test]
fn a_bad_hook_names_the_file_and_the_key_path() {
    let err = ConfigFile::parse(
        Path::new("/x/cogni.toml"),
        "model = \"m\"\n\n[[hooks.PreToolUse]]\nmatcher = \"shell(\"\ncommand = \"x\"\n",
    )
    .unwrap_err();
    assert!(err.0.starts_with("/x/cogni.toml:"), "{}", err.0);
    assert!(
        err.0
            .contains("hooks.PreToolUse[0].matcher: not a valid regex"),
        "{}",
        err.0
    );
    let err = ConfigFile::parse(
        Path::new("/x/cogni.toml"),
        "[[hooks.BeforeTool]]\ncommand = \"x\"\n",
    )
    .unwrap_err();
    assert!(
        err.0
            .contains("hooks.BeforeTool: unknown hook event `BeforeTool`"),
        "{}",
        err.0
    );
}
