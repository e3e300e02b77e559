use super::*;

fn parse(source: &str) -> Result<TaskFile, SpecError> {
    TaskFile::parse(Path::new("/nonexistent/tasks.toml"), source)
}

fn problems(source: &str) -> Vec<String> {
    parse(source)
        .unwrap_err()
        .problems
        .into_iter()
        .map(|p| format!("{}: {}", p.at, p.message))
        .collect()
}

const ISSUE_EXAMPLE: &str = r#"
[[agents]]
id = "default"
provider = "openai"
model = "gpt-4o-mini"

[[tasks]]
id = "hello"
agent = "default"
prompt = "Create out.txt containing hello"
budget = { max_tokens = 50000, max_seconds = 120, max_tool_calls = 20 }
checks = [
  { command = "test \"$(cat out.txt)\" = hello" },
  { file_exists = "out.txt" },
  { answer_regex = "(?i)done" },
]
"#;

#[test]
fn the_issue_example_parses() {
    let file = parse(ISSUE_EXAMPLE).unwrap();
    assert_eq!(file.agents.len(), 1);
    let task = &file.tasks[0];
    assert_eq!(task.agent, "default");
    assert_eq!(task.workspace, WorkspaceMode::Copy);
    assert_eq!(task.repeat, 1);
    assert_eq!(task.budget.max_tokens, Some(50000));
    assert_eq!(task.budget.max_seconds, Some(120.0));
    let kinds: Vec<&str> = task.checks.iter().map(Check::kind).collect();
    assert_eq!(kinds, ["command", "file_exists", "answer_regex"]);
    assert!(matches!(
        &task.checks[0],
        Check::Command { timeout, .. } if *timeout == DEFAULT_COMMAND_TIMEOUT
    ));
}

#[test]
fn without_agents_tasks_use_the_default_agent() {
    let file = parse("[[tasks]]\nid = \"a\"\nprompt = \"p\"\ntags = [\"smoke\"]\n").unwrap();
    assert_eq!(file.agents[0].id, DEFAULT_AGENT);
    assert_eq!(file.tasks[0].agent, DEFAULT_AGENT);
    assert_eq!(file.tasks[0].tags, ["smoke"]);
}

#[cfg(unix)]
#[test]
fn every_problem_is_reported_with_its_path() {
    let got = problems(
        r#"
[[agents]]
id = "a"
temperature = 3.0
sandbox = "yolo"
mdoel = "x"

[[agents]]
id = "b"

[[tasks]]
id = "one"
agent = "nobody"
prompt = "x"
budget = { max_tokens = 0, max_secondz = 1 }
checks = [
  { answer_regex = "(unclosed" },
  { file_matches = "out.txt", pattern = "[z-a]" },
  { answer_schema = { type = 7 } },
  { file_exists = "../etc/passwd" },
  { command = "true", file_exists = "x" },
  { },
]

[[tasks]]
id = "one"
prompt_file = "missing.md"

[[tasks]]
id = "bad id!"
prompt = "x"
agent = "a"
repeat = 0
"#,
    );
    let expected = [
        "agents[0].mdoel: unknown key",
        "tasks[0].budget.max_secondz: unknown key",
        "agents[0].temperature: must be between 0 and 2",
        "agents[0].sandbox: unknown sandbox mode `yolo`",
        "tasks[0].agent: unknown agent `nobody`; declared: `a`, `b`",
        "tasks[0].budget.max_tokens: must be greater than 0",
        "tasks[0].checks[0].answer_regex: invalid regex `(unclosed`",
        "tasks[0].checks[1].pattern: invalid regex `[z-a]`",
        "tasks[0].checks[2].answer_schema: not a valid JSON Schema",
        "tasks[0].checks[3].file_exists: `../etc/passwd`: a path relative to the workspace",
        "tasks[0].checks[4]: a check needs exactly one of",
        "tasks[0].checks[5]: a check needs exactly one of",
        "tasks[1].prompt_file: cannot read /nonexistent/missing.md",
        "tasks[1].agent: several agents are declared; name one of: `a`, `b`",
        "tasks[2].id: `bad id!`: ids start with",
        "tasks[2].repeat: must be at least 1",
        "tasks[1].id: duplicate id `one`",
    ];
    for needle in expected {
        assert!(
            got.iter().any(|p| p.starts_with(needle)),
            "{needle:?} missing from:\n{}",
            got.join("\n")
        );
    }
    assert_eq!(got.len(), expected.len(), "{}", got.join("\n"));
}

/// On Windows a path with a root but no drive, or a drive but no root,
/// is not `is_absolute`, yet leaves the workspace when joined to it.
#[cfg(windows)]
#[test]
fn windows_paths_with_a_root_or_a_drive_are_refused() {
    let got = problems(
        r#"
[[tasks]]
id = "t"
prompt = "x"
context_paths = ['\Windows\win.ini', 'C:secret.txt', 'src\ok.rs']
"#,
    );
    assert_eq!(got.len(), 2, "{got:?}");
    assert!(got[0].starts_with("tasks[0].context_paths[0]"), "{got:?}");
    assert!(got[1].starts_with("tasks[0].context_paths[1]"), "{got:?}");
}

#[test]
fn context_paths_stay_inside_the_workspace() {
    let got = problems(
        r#"
[[tasks]]
id = "t"
prompt = "x"
context_paths = ["src", "docs/a.md", "/etc/passwd", "../up", " "]
"#,
    );
    assert_eq!(
            got,
            [
                "tasks[0].context_paths[2]: `/etc/passwd`: a path inside the workspace, relative to its root",
                "tasks[0].context_paths[3]: `../up`: a path inside the workspace, relative to its root",
                "tasks[0].context_paths[4]: ` `: a path inside the workspace, relative to its root",
            ]
        );
}

#[test]
fn seconds_too_large_for_a_duration_are_a_problem_not_a_panic() {
    // Found by the task_file fuzz target: a timeout_secs of 1.4e73
    // made validation panic in Duration::from_secs_f64; a max_seconds
    // that large passed validation and would have made the runner
    // panic the same way.
    let got = problems(
        r#"
[[tasks]]
id = "t"
prompt = "x"
budget = { max_seconds = 1e30 }
checks = [
  { command = "true", timeout_secs = 1.4e73 },
  { command = "true", timeout_secs = inf },
  { command = "true", timeout_secs = nan },
  { command = "true", timeout_secs = 0.5 },
]
"#,
    );
    assert_eq!(
        got,
        [
            "tasks[0].budget.max_seconds: is too large",
            "tasks[0].checks[0].timeout_secs: is too large",
            "tasks[0].checks[1].timeout_secs: is too large",
            "tasks[0].checks[2].timeout_secs: must be greater than 0",
        ]
    );
}

#[test]
fn syntax_errors_point_at_the_line() {
    let err = parse("[[tasks]]\nid = \"a\"\nprompt = \n").unwrap_err();
    assert_eq!(err.problems.len(), 1);
    assert!(err.problems[0].at.starts_with("3:"), "{err}");
    assert!(err.to_string().starts_with("/nonexistent/tasks.toml:3:"));
}

#[test]
fn an_empty_file_has_no_tasks() {
    assert_eq!(problems(""), ["tasks: the file declares no [[tasks]]"]);
}

#[test]
fn agent_cards_are_parsed_and_their_mode_gives_the_sandbox() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("agents")).unwrap();
    std::fs::write(
            dir.path().join("agents/reviewer.md"),
            "+++\nmodel = \"gpt-4o-mini\"\ntools = [\"read_file\"]\nmode = \"plan\"\n+++\nReview only.\n",
        )
        .unwrap();
    std::fs::write(dir.path().join("agents/bad.md"), "+++\nmodle = 1\n+++\n").unwrap();
    let path = dir.path().join("tasks.toml");
    let body = |card: &str, sandbox: &str| {
        format!("[[agents]]\nid = \"a\"\ncard = \"{card}\"\n{sandbox}\n[[tasks]]\nid = \"t\"\nagent = \"a\"\nprompt = \"x\"\n")
    };
    std::fs::write(&path, body("agents/reviewer.md", "")).unwrap();
    let file = TaskFile::load(&path).unwrap();
    let card = file.agents[0].card.as_ref().unwrap();
    assert_eq!(card.model.as_deref(), Some("gpt-4o-mini"));
    assert_eq!(card.instructions, "Review only.");
    assert_eq!(file.agents[0].sandbox, Some(SandboxMode::ReadOnly));
    // The agent's own sandbox wins over the card's mode.
    std::fs::write(
        &path,
        body("agents/reviewer.md", "sandbox = \"workspace-write\""),
    )
    .unwrap();
    let file = TaskFile::load(&path).unwrap();
    assert_eq!(file.agents[0].sandbox, Some(SandboxMode::WorkspaceWrite));
    for (card, says) in [
        ("agents/bad.md", "modle"),
        ("agents/none.md", "cannot read"),
    ] {
        std::fs::write(&path, body(card, "")).unwrap();
        let e = TaskFile::load(&path).unwrap_err().to_string();
        assert!(e.contains("agents[0].card") && e.contains(says), "{e}");
    }
}

#[test]
fn files_named_by_the_task_file_are_read_relative_to_it() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("prompt.md"), "Do the thing").unwrap();
    std::fs::write(dir.path().join("card.md"), "You are careful.").unwrap();
    std::fs::write(dir.path().join("s.toml"), "[[turns]]\ntext = \"ok\"\n").unwrap();
    std::fs::write(
        dir.path().join("schema.json"),
        r#"{"type":"object","required":["ok"]}"#,
    )
    .unwrap();
    std::fs::create_dir(dir.path().join("fixture")).unwrap();
    let path = dir.path().join("tasks.toml");
    std::fs::write(
        &path,
        r#"
[[agents]]
id = "offline"
provider = "scripted"
instructions_file = "card.md"
input_price = 1.5

[[tasks]]
id = "t"
prompt_file = "prompt.md"
script = "s.toml"
source = "fixture"
workspace = "worktree"
checks = [{ answer_schema = "schema.json" }, { command = "make", timeout_secs = 2.5 }]
"#,
    )
    .unwrap();
    let file = TaskFile::load(&path).unwrap();
    let agent = &file.agents[0];
    assert_eq!(agent.instructions.as_deref(), Some("You are careful."));
    assert_eq!(agent.input_price, Some(1.5));
    let task = &file.tasks[0];
    assert_eq!(task.prompt, "Do the thing");
    assert_eq!(
        task.script.as_deref(),
        Some(dir.path().join("s.toml").as_path())
    );
    assert_eq!(
        task.source.as_deref(),
        Some(dir.path().join("fixture").as_path())
    );
    assert_eq!(task.workspace, WorkspaceMode::Worktree);
    assert!(matches!(&task.checks[0], Check::AnswerSchema(s) if s["required"][0] == "ok"));
    assert!(matches!(
        &task.checks[1],
        Check::Command { timeout, .. } if *timeout == Duration::from_millis(2500)
    ));
}

#[test]
fn scripted_agents_need_a_script_and_scripts_need_a_scripted_agent() {
    let got = problems(
        r#"
[[agents]]
id = "offline"
provider = "scripted"
[[agents]]
id = "real"
script = "s.toml"
[[tasks]]
id = "a"
agent = "offline"
prompt = "x"
[[tasks]]
id = "b"
agent = "real"
prompt = "x"
script = "s.toml"
"#,
    );
    let joined = got.join("\n");
    assert!(
        joined.contains("agents[1].script: a script needs provider = \"scripted\""),
        "{joined}"
    );
    assert!(
        joined.contains("tasks[0].script: agent `offline` uses the scripted provider"),
        "{joined}"
    );
    assert!(
        joined.contains("tasks[1].script: a script needs an agent with provider = \"scripted\""),
        "{joined}"
    );
}
