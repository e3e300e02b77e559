//! The system prompt as a whole: section order, snapshots, the size
//! budget, and when a session builds it again (start, environment, tools,
//! date roll-over) and when it does not (every other request).

use super::builder::{Identity, ProjectSoul, SystemPromptBuilder, SECTION_ORDER};
use super::clock::{FixedClock, Today};
use crate::{start_session_with_provider, Session, SessionConfig};
use cogni_protocol::{ApprovalPolicy, SandboxMode, SandboxPolicy, ToolFormat, ToolSpec};
use cogni_provider::model_family::{FamilyOverride, BASE_INSTRUCTIONS};
use cogni_provider::scripted::{Script, ScriptedProvider};
use cogni_provider::{ModelRequest, Provider, ProviderInfo, ResponseStream, WireApi};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

/// Compare `actual` with `tests/fixtures/prompt/<name>`; with
/// `COGNI_UPDATE_SNAPSHOTS=1` the fixture is written instead.
fn assert_snapshot(name: &str, actual: &str) {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/fixtures/prompt")
        .join(name);
    if std::env::var_os("COGNI_UPDATE_SNAPSHOTS").is_some() {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, actual).unwrap();
        return;
    }
    let expected = std::fs::read_to_string(&path).unwrap_or_else(|e| {
        panic!(
            "{}: {e} (run with COGNI_UPDATE_SNAPSHOTS=1 to write it)",
            path.display()
        )
    });
    assert!(
        actual == expected,
        "the prompt differs from {} (run with COGNI_UPDATE_SNAPSHOTS=1 to accept it):\n--- actual\n{actual}\n--- expected\n{expected}",
        path.display()
    );
}

/// A read-only function tool.
pub(super) fn tool(name: &str, description: &str) -> ToolSpec {
    ToolSpec {
        name: name.into(),
        description: description.into(),
        format: ToolFormat::Function {
            parameters: serde_json::json!({"type": "object"}),
        },
        read_only: true,
    }
}

/// Inputs for every section, fixed.
struct Everything {
    tools: Vec<ToolSpec>,
    skills: String,
    aliases: BTreeMap<String, String>,
    project: ProjectSoul,
    sandbox: SandboxPolicy,
    today: Today,
}

impl Everything {
    fn new() -> Self {
        Everything {
            tools: vec![
                tool("shell", "Run a shell command. Output is capped."),
                tool("read_file", "Read a text file with line numbers."),
            ],
            skills: "- release: Cut a release: bump, tag, publish.\n".into(),
            aliases: [("fast", "gpt-4.1-mini"), ("deep", "o3")]
                .into_iter()
                .map(|(a, m)| (a.to_string(), m.to_string()))
                .collect(),
            project: ProjectSoul {
                text: "In this repository, answer in British English.".into(),
                replace: false,
            },
            sandbox: SandboxPolicy {
                mode: SandboxMode::WorkspaceWrite,
                writable_roots: vec![PathBuf::from("/work/cache")],
                ..SandboxPolicy::default()
            },
            today: Today::new("2025-03-09", "CET (UTC+01:00)"),
        }
    }

    fn builder(&self) -> SystemPromptBuilder<'_> {
        SystemPromptBuilder {
            identity: Identity {
                base_instructions: None,
                soul: None,
                family_template: BASE_INSTRUCTIONS,
                project_soul: Some(&self.project),
                apply_patch_instructions: false,
            },
            tools: Some(&self.tools),
            skills: Some(&self.skills),
            model_aliases: &self.aliases,
            cwd: Path::new("/work/repo/app"),
            repo_root: Some(Path::new("/work/repo")),
            sandbox: &self.sandbox,
            model: "gpt-4.1",
            provider: "openai",
            today: &self.today,
            memory: Some("- The user runs tests with `make check`."),
            done_token: Some("[done]"),
            test_command: Some("make check"),
        }
    }
}

#[test]
fn sections_come_in_order_and_only_with_content() {
    let all = Everything::new();
    let builder = all.builder();
    let names: Vec<&str> = builder.sections().iter().map(|(n, _)| *n).collect();
    assert_eq!(names, SECTION_ORDER);
    let text = builder.build();
    let positions: Vec<usize> = [
        "You are cogni",
        "In this repository",
        "# Available tools",
        "# Skills",
        "# Model aliases",
        "# Workspace",
        "# Sandbox",
        "# Finishing",
        "# Runtime",
        "# Memory",
    ]
    .iter()
    .map(|h| {
        text.find(h)
            .unwrap_or_else(|| panic!("{h} missing in {text}"))
    })
    .collect();
    assert!(positions.windows(2).all(|w| w[0] < w[1]), "{positions:?}");
    assert!(
        !text.contains("\n\n\n"),
        "sections are one blank line apart"
    );

    // Without the optional inputs only identity, workspace, sandbox and
    // runtime are left.
    let none = BTreeMap::new();
    let bare = SystemPromptBuilder {
        tools: None,
        skills: None,
        model_aliases: &none,
        memory: None,
        done_token: None,
        test_command: None,
        ..builder
    };
    let names: Vec<&str> = bare.sections().iter().map(|(n, _)| *n).collect();
    assert_eq!(names, ["identity", "workspace", "sandbox", "runtime"]);
}

#[test]
fn the_whole_prompt_matches_its_snapshot() {
    assert_snapshot("all_sections.txt", &Everything::new().builder().build());
}

// ---------------------------------------------------------------------------
// Sessions
// ---------------------------------------------------------------------------

/// Replays a script and records the instructions of every request.
struct Recorder {
    inner: ScriptedProvider,
    instructions: Mutex<Vec<String>>,
}

impl Recorder {
    fn new(script: &str) -> Arc<Self> {
        Arc::new(Recorder {
            inner: ScriptedProvider::new(Script::parse(script).unwrap()),
            instructions: Mutex::new(Vec::new()),
        })
    }

    fn seen(&self) -> Vec<String> {
        self.instructions.lock().unwrap().clone()
    }
}

impl Provider for Recorder {
    fn id(&self) -> &str {
        "recorder"
    }

    fn stream(&self, request: &ModelRequest<'_>) -> ResponseStream {
        self.instructions
            .lock()
            .unwrap()
            .push(request.instructions.to_string());
        self.inner.stream(request)
    }
}

/// A session on `gpt-4.1` (provider `openai`) in a git repository, with
/// a fixed clock.
struct Fixture {
    repo: tempfile::TempDir,
    clock: FixedClock,
}

impl Fixture {
    fn new() -> Self {
        let repo = tempfile::tempdir().unwrap();
        std::fs::create_dir(repo.path().join(".git")).unwrap();
        Fixture {
            repo,
            clock: FixedClock::new(Today::new("2025-03-09", "CET (UTC+01:00)")),
        }
    }

    fn config(&self) -> SessionConfig {
        let mut info = ProviderInfo::new("openai", "http://127.0.0.1:9/v1", WireApi::Chat);
        info.default_model = Some("gpt-4.1".into());
        let mut c = SessionConfig::new(info, self.repo.path().to_path_buf());
        c.prompt.clock = Arc::new(self.clock.clone());
        c
    }

    fn start(&self, config: SessionConfig, provider: Arc<dyn Provider>) -> Session {
        start_session_with_provider(config, provider).unwrap()
    }

    /// The prompt with the temporary directory shown as `/work/repo`.
    fn shown(&self, prompt: &str) -> String {
        prompt.replace(&self.repo.path().display().to_string(), "/work/repo")
    }
}

/// The default prompt (no SOUL.md, no aliases, built-in family and tools)
/// stays under this many bytes: every byte goes with every request.
const DEFAULT_PROMPT_BUDGET: usize = 2400;

#[test]
fn the_default_prompt_matches_its_snapshot_and_stays_within_its_budget() {
    let f = Fixture::new();
    let s = f.start(f.config(), Recorder::new(""));
    let prompt = f.shown(s.context().system_prompt.text());
    assert_snapshot("default.txt", &prompt);
    assert!(
        prompt.len() <= DEFAULT_PROMPT_BUDGET,
        "the default system prompt grew to {} bytes (budget {DEFAULT_PROMPT_BUDGET})",
        prompt.len()
    );
}

#[test]
fn a_session_sends_the_prompt_it_built_with_soul_aliases_and_tools() {
    let f = Fixture::new();
    let mut c = f.config();
    c.prompt.soul = Some("You are Ada, a careful engineer.".into());
    c.model_aliases = [("fast", "gpt-4.1-mini"), ("deep", "o3")]
        .into_iter()
        .map(|(a, m)| (a.to_string(), m.to_string()))
        .collect();
    c.model_families.insert(
        "gpt-4.1".into(),
        FamilyOverride {
            tools_in_prompt: Some(true),
            ..Default::default()
        },
    );
    let s = f.start(c, Recorder::new(""));
    let text = s.context().system_prompt.text();
    assert!(
        text.starts_with("You are Ada, a careful engineer.\n\n# Available tools\n- shell: "),
        "{text}"
    );
    assert!(
        !text.contains("You are cogni"),
        "SOUL.md replaces the template"
    );
    for tool in &s.context().tools {
        assert!(
            text.contains(&format!("\n- {}", tool.name)),
            "{} missing",
            tool.name
        );
    }
    assert!(text.contains("# Model aliases\n"), "{text}");
    assert!(
        text.contains(&format!("Git repository root: {}", f.repo.path().display())),
        "{text}"
    );
    assert!(text.contains("Model: gpt-4.1 (provider: openai)"), "{text}");
}

#[test]
fn an_alias_selects_its_model() {
    let f = Fixture::new();
    let mut c = f.config();
    c.model_aliases.insert("fast".into(), "gpt-4.1-mini".into());
    c.model_override = Some("fast".into());
    let s = f.start(c, Recorder::new(""));
    assert_eq!(s.context().model, "gpt-4.1-mini");
    assert!(s
        .context()
        .system_prompt
        .text()
        .contains("Model: gpt-4.1-mini (provider: openai)"));
}

const TWO_TURNS_WITH_TOOLS: &str = r#"
[[turns]]
[[turns.tool_calls]]
name = "list_dir"
arguments = {}
[[turns]]
[[turns.tool_calls]]
name = "list_dir"
arguments = {}
[[turns]]
text = "first done"
[[turns]]
[[turns.tool_calls]]
name = "list_dir"
arguments = {}
[[turns]]
text = "second done"
"#;

fn sink() -> impl cogni_protocol::EventSink {
    |_: cogni_protocol::AgentEvent| {}
}

#[tokio::test]
async fn every_request_of_a_session_carries_the_same_prompt() {
    let f = Fixture::new();
    let recorder = Recorder::new(TWO_TURNS_WITH_TOOLS);
    let mut s = f.start(f.config(), recorder.clone());
    let built = s.context().system_prompt.text().to_string();
    s.run_turn("one", &sink()).await.unwrap();
    s.run_turn("two", &sink()).await.unwrap();
    let seen = recorder.seen();
    assert_eq!(seen.len(), 5);
    assert!(seen.iter().all(|i| *i == built), "{seen:#?}");
}

#[tokio::test]
async fn the_prompt_is_rebuilt_when_the_date_rolls_over_and_only_then() {
    let f = Fixture::new();
    let recorder = Recorder::new(TWO_TURNS_WITH_TOOLS);
    let mut s = f.start(f.config(), recorder.clone());
    s.run_turn("one", &sink()).await.unwrap();
    // Midnight passes between the turns.
    f.clock.set(Today::new("2025-03-10", "CET (UTC+01:00)"));
    s.run_turn("two", &sink()).await.unwrap();
    let seen = recorder.seen();
    assert_eq!(seen.len(), 5);
    assert!(seen[..3]
        .iter()
        .all(|i| i.contains("Today's date: 2025-03-09")));
    assert!(seen[3..]
        .iter()
        .all(|i| i.contains("Today's date: 2025-03-10")));
    assert_eq!(
        seen[0].replace("2025-03-09", "2025-03-10"),
        seen[3],
        "only the date changed"
    );
    assert_eq!(s.context().system_prompt.today().date, "2025-03-10");
}

#[test]
fn a_date_change_within_a_turn_waits_for_the_next_turn() {
    let f = Fixture::new();
    let mut s = f.start(f.config(), Recorder::new(""));
    let before = s.context().system_prompt.text().to_string();
    assert!(
        !s.ctx.refresh_system_prompt_date(),
        "same day: nothing to do"
    );
    f.clock.set(Today::new("2025-03-10", "CET (UTC+01:00)"));
    assert_eq!(
        s.context().system_prompt.text(),
        before,
        "the clock alone changes nothing"
    );
    assert!(s.ctx.refresh_system_prompt_date());
    assert!(s.context().system_prompt.text().contains("2025-03-10"));
}

#[test]
fn environment_changes_rebuild_the_prompt_only_when_it_shows_them() {
    let f = Fixture::new();
    let mut s = f.start(f.config(), Recorder::new(""));
    let before = s.context().system_prompt.text().to_string();

    // The approval policy is not in the prompt.
    assert!(s.update_environment(None, Some(ApprovalPolicy::Never), None));
    assert_eq!(s.context().system_prompt.text(), before);

    let mut policy = s.context().sandbox_policy.clone();
    policy.network_access = true;
    assert!(s.update_environment(None, None, Some(policy)));
    let networked = s.context().system_prompt.text().to_string();
    assert_eq!(networked, before.replace("Network: off", "Network: on"));

    let elsewhere = tempfile::tempdir().unwrap();
    s.update_environment(Some(elsewhere.path().to_path_buf()), None, None);
    let moved = s.context().system_prompt.text();
    assert!(
        moved.contains(&format!(
            "Working directory: {}",
            elsewhere.path().display()
        )),
        "{moved}"
    );
    assert!(
        !moved.contains("Git repository root"),
        "not a repository: {moved}"
    );
}

#[test]
fn new_tools_and_a_new_model_rebuild_the_prompt() {
    let f = Fixture::new();
    let mut c = f.config();
    c.model_families.insert(
        "gpt-4.1".into(),
        FamilyOverride {
            tools_in_prompt: Some(true),
            ..Default::default()
        },
    );
    let mut s = f.start(c.clone(), Recorder::new(""));
    assert!(s.context().system_prompt.text().contains("\n- shell: "));

    let mut fewer = c.tool_config.clone();
    fewer.enabled = vec!["read_file".into()];
    fewer.edit_tool = Some(cogni_protocol::EditTool::None);
    let registry =
        cogni_tools::ToolRegistry::from_config(&fewer, cogni_protocol::EditTool::None).unwrap();
    s.set_tools(registry);
    let text = s.context().system_prompt.text();
    assert!(text.contains("\n- read_file: "), "{text}");
    assert!(!text.contains("\n- shell: "), "{text}");

    c.model_override = Some("gpt-4.1-mini".into());
    s.reconfigure(c).unwrap();
    assert!(s
        .context()
        .system_prompt
        .text()
        .contains("Model: gpt-4.1-mini (provider: openai)"));
}
