//! The mappings, on realistic files (tests/fixtures/import/): what each
//! setting becomes, what is reported and why, and that cogni's own loader
//! takes the result.

use super::claude::{self, Scope};
use super::claude_tools;
use super::{check, codex, comment, server_name, Import};
use std::path::{Path, PathBuf};

const CODEX: &str = include_str!("../../../tests/fixtures/import/codex/config.toml");
const FIXTURES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/import/claude");

/// The rendered import, checked by cogni's loader, as a TOML table.
fn rendered(imp: &Import) -> toml::Table {
    let text = imp.render();
    check(&text).unwrap_or_else(|e| panic!("cogni refuses the import: {e}\n{text}"));
    toml::from_str(&text).unwrap()
}

/// The value at a dotted path (quoted parts for names with dots).
fn at<'a>(table: &'a toml::Table, path: &[&str]) -> &'a toml::Value {
    let (first, rest) = path.split_first().unwrap();
    let mut value = &table[*first];
    for part in rest {
        value = value
            .get(part)
            .unwrap_or_else(|| panic!("no {part} in {path:?}: {value}"));
    }
    value
}

/// Why `key` was not imported.
fn why<'a>(imp: &'a Import, key: &str) -> &'a str {
    imp.skipped
        .iter()
        .find(|e| e.key == key)
        .map(|e| e.why.as_str())
        .unwrap_or_else(|| panic!("{key} is not reported; reported: {:?}", imp.skipped))
}

fn codex_import() -> Import {
    let table: toml::Table = toml::from_str(CODEX).unwrap();
    codex::import(
        &table,
        Path::new("/home/me/.codex/config.toml"),
        Some(Path::new("/home/me")),
    )
}

#[cfg(unix)]
#[test]
fn a_typical_codex_config_maps_key_by_key() {
    let imp = codex_import();
    let t = rendered(&imp);
    assert_eq!(at(&t, &["model"]).as_str(), Some("gpt-5-codex"));
    assert_eq!(at(&t, &["provider"]).as_str(), Some("openai"));
    assert_eq!(at(&t, &["reasoning_effort"]).as_str(), Some("high"));
    assert_eq!(at(&t, &["approval_policy"]).as_str(), Some("on-request"));
    assert_eq!(at(&t, &["sandbox_mode"]).as_str(), Some("workspace-write"));
    assert_eq!(at(&t, &["profile"]).as_str(), Some("fast"));
    assert_eq!(at(&t, &["project_doc_max_bytes"]).as_integer(), Some(65536));
    assert_eq!(
        at(&t, &["base_instructions_file"]).as_str(),
        Some("/home/me/.codex/prompts/base.md")
    );
    assert_eq!(
        at(&t, &["compaction", "token_limit"]).as_integer(),
        Some(200000)
    );
    assert_eq!(
        at(&t, &["model_families", "gpt-5-codex", "context_window"]).as_integer(),
        Some(272000)
    );
    // Relative roots are relative to Codex's file.
    assert_eq!(
        at(&t, &["sandbox_workspace_write", "writable_roots"]),
        &toml::Value::from(vec!["/home/me/.cache/pip", "/home/me/.codex/scratch"])
    );
    assert_eq!(
        at(&t, &["sandbox_workspace_write", "network_access"]).as_bool(),
        Some(true)
    );
    let env = at(&t, &["tools", "shell_env"]);
    assert_eq!(env["inherit"].as_str(), Some("core"));
    assert_eq!(env["exclude"], toml::Value::from(vec!["AWS_*", "AZURE_*"]));
    assert_eq!(env["set"]["PAGER"].as_str(), Some("cat"));
    assert_eq!(
        env["include_only"],
        toml::Value::from(vec!["PATH", "HOME", "LANG", "CI"])
    );
    assert_eq!(
        at(&t, &["tools", "edit_tool"]).as_str(),
        Some("apply_patch_freeform")
    );
    assert_eq!(
        at(&t, &["trusted_projects"]),
        &toml::Value::from(vec!["/home/me/src/app"])
    );
    for key in [
        "notify",
        "hide_agent_reasoning",
        "file_opener",
        "model_reasoning_summary",
        "model_verbosity",
        "tui",
        "history",
        "features.web_search_request",
        "sandbox_workspace_write.exclude_slash_tmp",
    ] {
        assert!(!why(&imp, key).is_empty());
    }
    assert!(why(&imp, "notify").contains("hooks.Stop"));
    assert!(why(&imp, "history").contains("--no-persist"));
}

#[test]
fn codex_profiles_become_cogni_profiles_with_their_own_providers_and_families() {
    let imp = codex_import();
    let t = rendered(&imp);
    let fast = at(&t, &["profiles", "fast"]);
    assert_eq!(fast["model"].as_str(), Some("gpt-5-mini"));
    assert_eq!(fast["reasoning_effort"].as_str(), Some("low"));
    assert_eq!(fast["approval_policy"].as_str(), Some("never"));
    let azure = at(&t, &["profiles", "azure"]);
    assert_eq!(azure["provider"].as_str(), Some("azure-responses"));
    // Codex's `oss` is Ollama, which cogni has built in.
    let local = at(&t, &["profiles", "local"]);
    assert_eq!(local["provider"].as_str(), Some("ollama"));
    assert_eq!(
        local["model_families"]["qwen2.5-coder:32b"]["context_window"].as_integer(),
        Some(32768)
    );
    // A value cogni refuses goes to the report with cogni's reason, and the
    // rest of its profile stays.
    assert!(why(&imp, "profiles.careful.model_reasoning_effort").contains("xhigh"));
    assert_eq!(
        at(&t, &["profiles", "careful", "sandbox_mode"]).as_str(),
        Some("read-only")
    );
    assert!(!why(&imp, "profiles.azure.model_reasoning_summary").is_empty());
}

#[test]
fn codex_providers_and_servers_keep_what_cogni_has() {
    let imp = codex_import();
    let t = rendered(&imp);
    let router = at(&t, &["model_providers", "openrouter-chat"]);
    assert_eq!(
        router["base_url"].as_str(),
        Some("https://openrouter.ai/api/v1")
    );
    assert_eq!(router["env_key"].as_str(), Some("OPENROUTER_API_KEY"));
    assert_eq!(router["wire_api"].as_str(), Some("chat"));
    assert_eq!(router["max_retries"].as_integer(), Some(6));
    assert_eq!(router["stream_idle_timeout_ms"].as_integer(), Some(120000));
    assert_eq!(
        router["http_headers"]["HTTP-Referer"].as_str(),
        Some("https://example.com")
    );
    assert!(why(&imp, "model_providers.openrouter-chat.env_http_headers").contains("env_key"));
    assert!(
        why(&imp, "model_providers.openrouter-chat.stream_max_retries").contains("max_retries")
    );
    let azure = at(&t, &["model_providers", "azure-responses"]);
    assert_eq!(azure["wire_api"].as_str(), Some("responses"));
    assert_eq!(
        azure["query_params"]["api-version"].as_str(),
        Some("2025-04-01-preview")
    );
    // Codex ignores a table that reuses a built-in id; so does the import.
    assert!(why(&imp, "model_providers.openai").contains("built-in"));
    assert!(t["model_providers"].get("openai").is_none());

    let github = at(&t, &["mcp_servers", "github"]);
    assert_eq!(github["command"].as_str(), Some("npx"));
    assert_eq!(github["env_vars"], toml::Value::from(vec!["GITHUB_TOKEN"]));
    assert_eq!(github["startup_timeout_sec"].as_float(), Some(20.0));
    assert_eq!(github["tool_timeout_sec"].as_integer(), Some(30));
    let figma = at(&t, &["mcp_servers", "figma"]);
    assert_eq!(figma["bearer_token_env_var"].as_str(), Some("FIGMA_TOKEN"));
    // A name cogni cannot take is changed, and said so.
    let docs = at(&t, &["mcp_servers", "docs-search"]);
    assert_eq!(docs["enabled"].as_bool(), Some(false));
    assert!(imp
        .notes
        .iter()
        .any(|n| n.key == "mcp_servers.docs.search" && n.why.contains("docs-search")));
    // A server whose token is in the file is not imported at all.
    assert!(why(&imp, "mcp_servers.legacy").contains("bearer_token_env_var"));
    assert!(t["mcp_servers"].get("legacy").is_none());
    assert!(!imp.render().contains("abc123"));
}

#[test]
fn codex_builtin_providers_profiles_and_unknown_ids() {
    let table: toml::Table = toml::from_str(
        r#"
        model_provider = "lmstudio"
        profile = "missing"
        [profiles.other]
        model_provider = "nowhere"
        [model_providers.new]
        name = "no url"
        "#,
    )
    .unwrap();
    let imp = codex::import(&table, Path::new("/c/config.toml"), None);
    let t = rendered(&imp);
    assert_eq!(at(&t, &["provider"]).as_str(), Some("lmstudio"));
    assert_eq!(
        at(&t, &["model_providers", "lmstudio", "base_url"]).as_str(),
        Some("http://localhost:1234/v1")
    );
    assert!(why(&imp, "profile").contains("[profiles.missing]"));
    assert!(why(&imp, "profiles.other.model_provider").contains("nowhere"));
    assert!(why(&imp, "model_providers.new").contains("base_url"));
    // An empty profile is kept: `--profile other` still works.
    assert!(at(&t, &["profiles", "other"])
        .as_table()
        .unwrap()
        .is_empty());
}

/// The Claude Code fixtures laid out as Claude Code keeps them: a home
/// directory (`.claude/settings.json`, `.claude.json`) and a project.
fn claude_dirs() -> (tempfile::TempDir, PathBuf, PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    let root = crate::sandbox::sys::canonicalize(tmp.path()).unwrap();
    let home = root.join("home");
    let project = root.join("project");
    for (from, to) in [
        ("user-settings.json", home.join(".claude/settings.json")),
        ("claude.json", home.join(".claude.json")),
        (
            "project-settings.json",
            project.join(".claude/settings.json"),
        ),
        (
            "project-settings.local.json",
            project.join(".claude/settings.local.json"),
        ),
        ("mcp.json", project.join(".mcp.json")),
    ] {
        std::fs::create_dir_all(to.parent().unwrap()).unwrap();
        std::fs::copy(Path::new(FIXTURES).join(from), to).unwrap();
    }
    (tmp, home, project)
}

fn user_import(home: &Path) -> Import {
    let files = [
        home.join(".claude/settings.json"),
        home.join(".claude.json"),
    ];
    claude::import(&files, Scope::User, Some(home)).unwrap()
}

fn project_import(project: &Path) -> Import {
    let files = [
        project.join(".claude/settings.json"),
        project.join(".claude/settings.local.json"),
        project.join(".mcp.json"),
    ];
    claude::import(&files, Scope::Project(project.to_path_buf()), None).unwrap()
}

/// The `[[hooks.EVENT]]` tables of `t` as (matcher, command, timeout_ms).
fn hooks(t: &toml::Table, event: &str) -> Vec<(Option<String>, String, Option<i64>)> {
    at(t, &["hooks", event])
        .as_array()
        .unwrap()
        .iter()
        .map(|h| {
            (
                h.get("matcher").and_then(|m| m.as_str()).map(String::from),
                h["command"].as_str().unwrap().to_string(),
                h.get("timeout_ms").and_then(|m| m.as_integer()),
            )
        })
        .collect()
}

#[test]
fn claude_hooks_become_cogni_hooks_with_cognis_tool_names() {
    let (_tmp, home, _) = claude_dirs();
    let imp = user_import(&home);
    let t = rendered(&imp);
    let file = "settings.json";
    assert_eq!(
        hooks(&t, "PreToolUse"),
        vec![
            (
                Some("shell".into()),
                "~/.claude/hooks/check-bash.sh".into(),
                Some(30000)
            ),
            (
                Some("apply_patch|edit_file|write_file".into()),
                "\"$CLAUDE_PROJECT_DIR\"/.claude/hooks/format.sh".into(),
                None
            ),
        ]
    );
    assert!(why(&imp, &format!("hooks.PreToolUse[1].hooks[1] in {file}")).contains("prompt"));
    assert!(why(&imp, &format!("hooks.PreToolUse[2] in {file}")).contains("WebSearch"));
    assert_eq!(
        hooks(&t, "PostToolUse"),
        vec![(
            Some("mcp__github__.*".into()),
            "logger github-call".into(),
            None
        )]
    );
    assert_eq!(hooks(&t, "UserPromptSubmit").len(), 1);
    assert_eq!(
        hooks(&t, "Stop"),
        vec![(None, "~/.claude/hooks/tests-pass.sh".into(), None)]
    );
    assert_eq!(
        hooks(&t, "SessionStart"),
        vec![(Some("startup".into()), "git status --short".into(), None)]
    );
    assert_eq!(
        hooks(&t, "Notification"),
        vec![(None, "notify-send Claude".into(), None)]
    );
}

#[test]
fn claude_permissions_deny_rules_become_guardrails_and_the_rest_is_reported() {
    let (_tmp, home, _) = claude_dirs();
    let imp = user_import(&home);
    let t = rendered(&imp);
    let effects: Vec<(String, String)> = at(&t, &["effects"])
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            assert_eq!(e["kind"].as_str(), Some("guardrail"));
            assert_eq!(e["on"].as_str(), Some("tool_call"));
            (
                e["tools"].as_str().unwrap().into(),
                e["reason"].as_str().unwrap().into(),
            )
        })
        .collect();
    let tools: Vec<&str> = effects.iter().map(|(t, _)| t.as_str()).collect();
    assert_eq!(
        tools,
        [
            "shell",
            "shell",
            "read_file|grep|glob|list_dir",
            "read_file|grep|glob|list_dir",
            "apply_patch|edit_file|write_file",
            "web_fetch",
            "mcp__slack__.*"
        ]
    );
    assert!(effects[0].1.contains("`Bash(rm -rf:*)`"));
    assert!(effects[5].1.contains("`WebFetch(domain:example.com)`"));
    let file = "settings.json";
    assert!(why(
        &imp,
        &format!("permissions.allow `Bash(npm run test:*)` in {file}")
    )
    .contains("approval policy"));
    assert!(why(
        &imp,
        &format!("permissions.ask `Bash(git push:*)` in {file}")
    )
    .contains("untrusted"));
    assert_eq!(at(&t, &["approval_policy"]).as_str(), Some("on-request"));
    assert_eq!(
        at(&t, &["sandbox_workspace_write", "writable_roots"]),
        &toml::Value::from(vec![home.join("shared-notes").display().to_string()])
    );
    assert!(why(
        &imp,
        &format!("permissions.additionalDirectories in {file}: `../sibling`")
    )
    .contains("absolute"));
}

#[test]
fn claude_env_model_and_servers() {
    let (_tmp, home, _) = claude_dirs();
    let imp = user_import(&home);
    let t = rendered(&imp);
    let text = imp.render();
    assert_eq!(at(&t, &["model"]).as_str(), Some("claude-sonnet-4-5"));
    assert_eq!(at(&t, &["provider"]).as_str(), Some("anthropic"));
    let set = at(&t, &["tools", "shell_env", "set"]);
    assert_eq!(set["CI"].as_str(), Some("1"));
    assert_eq!(
        set["NODE_OPTIONS"].as_str(),
        Some("--max-old-space-size=4096")
    );
    assert_eq!(
        at(&t, &["tools", "shell_timeout_ms"]).as_integer(),
        Some(300000)
    );
    let file = "settings.json";
    assert!(why(&imp, &format!("env.GITHUB_TOKEN in {file}")).contains("secret"));
    assert!(!text.contains("ghp_"), "a secret was written:\n{text}");
    assert!(why(&imp, &format!("env.DISABLE_TELEMETRY in {file}")).contains("Claude Code itself"));
    for key in [
        "apiKeyHelper",
        "statusLine",
        "includeCoAuthoredBy",
        "cleanupPeriodDays",
    ] {
        assert!(!why(&imp, &format!("{key} in {file}")).is_empty());
    }

    let fs = at(&t, &["mcp_servers", "filesystem"]);
    assert_eq!(fs["command"].as_str(), Some("npx"));
    assert!(fs.get("env").is_none());
    let sentry = at(&t, &["mcp_servers", "sentry"]);
    assert_eq!(sentry["url"].as_str(), Some("https://mcp.sentry.dev/mcp"));
    assert_eq!(
        sentry["bearer_token_env_var"].as_str(),
        Some("SENTRY_TOKEN")
    );
    assert_eq!(
        sentry["env_http_headers"]["X-Org"].as_str(),
        Some("SENTRY_ORG")
    );
    assert_eq!(sentry["http_headers"]["X-Client"].as_str(), Some("cogni"));
    assert!(why(&imp, "mcpServers.linear in .claude.json").contains("SSE"));
    assert!(why(
        &imp,
        "projects.\"/home/me/src/app\".mcpServers in .claude.json"
    )
    .contains("cogni mcp add"));
}

#[test]
fn a_projects_settings_and_mcp_json_are_one_projects_import() {
    let (_tmp, _, project) = claude_dirs();
    let imp = project_import(&project);
    let t = rendered(&imp);
    assert!(imp.render().contains("cogni trust"));
    assert_eq!(
        hooks(&t, "PostToolUse"),
        vec![(
            Some("apply_patch|edit_file|write_file".into()),
            "cargo fmt".into(),
            Some(60000)
        )]
    );
    assert_eq!(at(&t, &["effects"]).as_array().unwrap().len(), 2);
    assert_eq!(
        at(&t, &["tools", "shell_env", "set", "RUST_BACKTRACE"]).as_str(),
        Some("1")
    );
    // settings.local.json comes after settings.json.
    assert_eq!(at(&t, &["model"]).as_str(), Some("claude-opus-4-5"));
    assert!(why(&imp, "permissions.defaultMode in settings.local.json").contains("--mode plan"));
    assert!(why(&imp, "enabledMcpjsonServers in settings.json").contains("cogni trust"));
    let postgres = at(&t, &["mcp_servers", "postgres"]);
    assert_eq!(
        postgres["env_vars"],
        toml::Value::from(vec!["DATABASE_URL"])
    );
    assert_eq!(postgres["env"]["PGSSLMODE"].as_str(), Some("require"));
    assert_eq!(
        at(&t, &["mcp_servers", "browser", "enabled"]).as_bool(),
        Some(false)
    );
    assert!(why(&imp, "mcpServers.api in .mcp.json").contains("${...}"));
    // A project opens only its own directories to commands.
    assert_eq!(
        at(&t, &["sandbox_workspace_write", "writable_roots"]),
        &toml::Value::from(vec![project.join("docs").display().to_string()])
    );
    assert!(why(
        &imp,
        "permissions.additionalDirectories in settings.json: `../other-repo`"
    )
    .contains("outside the project"));
}

#[test]
fn a_hostile_projects_names_and_values_stay_text() {
    let tmp = tempfile::tempdir().unwrap();
    let project = crate::sandbox::sys::canonicalize(tmp.path()).unwrap();
    let injected = "\n[mcp_servers.planted]\ncommand = \"sh\"\n";
    let mcp = serde_json::json!({ "mcpServers": {
        format!("x{injected}"): { "command": format!("true{injected}") },
    }});
    let settings = serde_json::json!({
        "hooks": { format!("Stop{injected}"): [] },
        "permissions": { "deny": [format!("Bash(rm{injected})")] },
        format!("key{injected}"): 1,
    });
    std::fs::create_dir(project.join(".claude")).unwrap();
    std::fs::write(project.join(".mcp.json"), mcp.to_string()).unwrap();
    std::fs::write(project.join(".claude/settings.json"), settings.to_string()).unwrap();
    let imp = project_import(&project);
    let t = rendered(&imp);
    let name = server_name(&format!("x{injected}")).unwrap();
    let servers: Vec<&String> = t["mcp_servers"].as_table().unwrap().keys().collect();
    assert_eq!(servers, [&name]);
    assert!(t.get("hooks").is_none());
    assert_eq!(t.len(), 2, "{t:?}");
    assert_eq!(
        at(&t, &["mcp_servers", &name, "command"]).as_str(),
        Some(format!("true{injected}").as_str())
    );
}

#[cfg(unix)]
#[test]
fn a_project_file_that_links_outside_the_project_is_not_opened() {
    let tmp = tempfile::tempdir().unwrap();
    let root = crate::sandbox::sys::canonicalize(tmp.path()).unwrap();
    let project = root.join("project");
    std::fs::create_dir(&project).unwrap();
    std::fs::write(
        root.join("mine.json"),
        r#"{"mcpServers": {"mine": {"command": "mine"}}}"#,
    )
    .unwrap();
    std::os::unix::fs::symlink(root.join("mine.json"), project.join(".mcp.json")).unwrap();
    // Nor is one that would never end.
    std::fs::create_dir(project.join(".claude")).unwrap();
    let settings = project.join(".claude/settings.json");
    std::os::unix::fs::symlink("/dev/zero", &settings).unwrap();
    let imp = project_import(&project);
    assert!(rendered(&imp).is_empty());
    for link in [project.join(".mcp.json"), settings] {
        assert!(why(&imp, &link.display().to_string()).contains("outside the project"));
    }
}

#[test]
fn tool_matchers_name_cognis_tools() {
    use claude_tools::tool_matcher as m;
    assert_eq!(m("Bash"), Ok(Some("shell".into())));
    assert_eq!(
        m("Edit|MultiEdit|Write"),
        Ok(Some("apply_patch|edit_file|write_file".into()))
    );
    assert_eq!(
        m("Read|Grep|Glob|LS"),
        Ok(Some("read_file|grep|glob|list_dir".into()))
    );
    assert_eq!(m(".*"), Ok(None));
    assert_eq!(
        m("Bash|mcp__github__.*"),
        Ok(Some("shell|mcp__github__.*".into()))
    );
    assert_eq!(m("Notebook.*"), Err("names no tool cogni has".into()));
    assert!(m("(").is_err());
}

/// Whether the guardrail for `rule` blocks a call of `tool` with these
/// arguments (as JSON), as cogni's guardrail effect decides.
fn blocks(rule: &str, tool: &str, arguments: serde_json::Value) -> bool {
    let (tools, pattern) = claude_tools::guardrail(rule).unwrap();
    let tools = regex::Regex::new(&format!("^(?:{tools})$")).unwrap();
    let pattern = regex::Regex::new(&pattern).unwrap();
    tools.is_match(tool) && pattern.is_match(&arguments.to_string())
}

#[test]
fn deny_rules_block_what_claude_code_blocks_on_cognis_tools() {
    use serde_json::json;
    let cmd = |c: &str| json!({ "command": c });
    assert!(blocks("Bash(rm -rf:*)", "shell", cmd("rm -rf /")));
    assert!(blocks(
        "Bash(rm -rf:*)",
        "shell",
        cmd("cd build && rm  -rf x")
    ));
    assert!(!blocks("Bash(rm -rf:*)", "shell", cmd("rm -r x")));
    assert!(!blocks(
        "Bash(rm -rf:*)",
        "read_file",
        json!({"path": "rm -rf"})
    ));
    assert!(blocks(
        "Bash(npm run test:*)",
        "shell",
        cmd("npm run test -- --watch")
    ));
    assert!(!blocks("Bash(npm:*)", "shell", cmd("npmx install")));
    assert!(blocks(
        "Bash(git * main)",
        "shell",
        cmd("git push origin main")
    ));
    assert!(blocks("Bash", "shell", cmd("ls")));

    let path = |p: &str| json!({ "path": p });
    assert!(blocks(
        "Read(./secrets/**)",
        "read_file",
        path("secrets/key.pem")
    ));
    assert!(blocks("Read(./secrets/**)", "grep", path("/repo/secrets")));
    assert!(!blocks(
        "Read(./secrets/**)",
        "read_file",
        path("src/secretsauce.rs")
    ));
    assert!(blocks("Read(./.env)", "read_file", path(".env")));
    assert!(blocks("Read(./.env)", "list_dir", path("app/.env")));
    assert!(!blocks("Read(./.env)", "read_file", path(".envrc")));
    assert!(blocks("Read(*.pem)", "read_file", path("certs/host.pem")));
    assert!(blocks(
        "Edit(~/.ssh/**)",
        "write_file",
        path("/home/me/.ssh/config")
    ));
    let patch = "*** Begin Patch\n*** Update File: config/prod.yml\n@@\n-a\n+b\n*** End Patch";
    assert!(blocks(
        "Edit(config/prod.yml)",
        "apply_patch",
        json!({ "input": patch })
    ));
    assert!(!blocks(
        "Edit(config/prod.yml)",
        "read_file",
        path("config/prod.yml")
    ));

    assert!(blocks("mcp__slack", "mcp__slack__post", json!({})));
    assert!(blocks(
        "mcp__github__create_*",
        "mcp__github__create_issue",
        json!({})
    ));
    assert!(!blocks(
        "mcp__github__create_*",
        "mcp__github__get_issue",
        json!({})
    ));
    let url = |u: &str| json!({ "url": u });
    for denied in [
        "https://example.com/",
        "http://Docs.Example.COM:8080/a?b",
        "https://u@api.example.com",
        "https://example.com.",
    ] {
        assert!(
            blocks("WebFetch(domain:example.com)", "web_fetch", url(denied)),
            "{denied}"
        );
    }
    for allowed in [
        "https://notexample.com/",
        "https://example.com.evil.org/",
        "https://evil.org/?q=example.com",
    ] {
        assert!(
            !blocks("WebFetch(domain:example.com)", "web_fetch", url(allowed)),
            "{allowed}"
        );
    }
    assert!(blocks(
        "WebFetch(domain:*.example.com)",
        "web_fetch",
        url("https://a.example.com/")
    ));
    assert!(blocks("WebFetch", "web_fetch", url("https://x.org/")));
    assert!(claude_tools::guardrail("WebFetch(https://x.org)").is_err());
    assert!(claude_tools::guardrail("WebSearch").is_err());
    assert!(claude_tools::guardrail("Frobnicate").is_err());
}

#[test]
fn the_report_is_comments_after_the_settings() {
    let mut imp = Import::new("About.");
    imp.source(Path::new("/x/settings.json"));
    imp.set("model in settings.json", &["model"], toml_edit::value("m"));
    imp.skip("a\nb = 1", "why");
    imp.note("model", "changed");
    let text = imp.render();
    assert!(text.starts_with(
        "# cogni.toml made by `cogni import` from:\n#   /x/settings.json\n# About.\n"
    ));
    assert!(text.contains("\nmodel = \"m\"\n"));
    assert!(text.ends_with(
        "# Not imported: these settings have no cogni equivalent.\n#   a\\nb = 1: why\n\n# Imported with a change:\n#   model: changed\n"
    ));
    let t: toml::Table = toml::from_str(&text).unwrap();
    assert_eq!(t.len(), 1);
    assert_eq!(comment("x\r\u{1b}[2J"), "# x\\r\\u{1b}[2J\n");
}

#[test]
fn a_setting_cogni_refuses_is_reported_not_written() {
    let mut imp = Import::new("");
    assert!(!imp.set(
        "approval_policy",
        &["approval_policy"],
        toml_edit::value("sometimes")
    ));
    assert!(rendered(&imp).is_empty());
    assert!(why(&imp, "approval_policy").contains("sometimes"));
    let mut server = toml_edit::Table::new();
    server.insert("url", toml_edit::value("ws://example.com"));
    assert!(!imp.set("s", &["mcp_servers", "s"], toml_edit::Item::Table(server)));
    assert!(why(&imp, "s").contains("not an http:// or https:// URL"));
}

#[test]
fn server_names_keep_to_what_cogni_takes() {
    assert_eq!(server_name("github"), None);
    assert_eq!(server_name("my-server_2"), None);
    assert_eq!(server_name("docs.search"), Some("docs-search".into()));
    assert_eq!(server_name("a b/c"), Some("a-b-c".into()));
}
