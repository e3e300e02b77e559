//! Skills through the real binary: the system prompt's listing (names and
//! descriptions only, within its budget), `$name` putting a skill's
//! procedure after the prompt, the `skill` tool (procedure and file list,
//! files unread), a skill kept through compaction, untrusted project
//! skills ignored with a warning, `cogni skills` and `/skills`.

use crate::cli::{stderr_of, stdout_of, Env};
use crate::common::mock::chat::{self, system_prompt};
use crate::common::mock::{tool_names, MockResponse, MockServer};
use serde_json::Value;
use std::path::Path;

/// `dir/NAME/SKILL.md`.
fn write_skill(dir: &Path, name: &str, description: &str, body: &str) {
    std::fs::create_dir_all(dir.join(name)).unwrap();
    std::fs::write(
        dir.join(name).join("SKILL.md"),
        format!("---\nname: {name}\ndescription: {description}\n---\n{body}\n"),
    )
    .unwrap();
}

/// `$COGNI_HOME/config.toml`: skills on (or off), the workspace trusted
/// (or not), then `extra`.
fn configure(env: &Env, enabled: bool, trusted: bool, extra: &str) {
    let trust = if trusted {
        format!("trusted_projects = [\"{}\"]\n", env.work().display())
    } else {
        String::new()
    };
    std::fs::write(
        env.dir.path().join("home/config.toml"),
        format!("{trust}[features]\nskills_enabled = {enabled}\n{extra}"),
    )
    .unwrap();
}

/// A project skill `pdf` with a script, and a user skill `release`.
fn skills(env: &Env) {
    let project = env.work().join(".cogni/skills");
    write_skill(
        &project,
        "pdf",
        "Fill PDF forms. Use when the user gives a form.",
        "PDF-PROCEDURE: run scripts/fill.py on the form.",
    );
    std::fs::create_dir_all(project.join("pdf/scripts")).unwrap();
    std::fs::write(project.join("pdf/scripts/fill.py"), "SCRIPT-CONTENT").unwrap();
    write_skill(
        &env.dir.path().join("home/skills"),
        "release",
        "Cut a release.",
        "RELEASE-PROCEDURE: tag and publish.",
    );
}

/// A workspace with [`skills`], configured (on or off, trusted or not,
/// `extra`), after one `cogni run --json TASK` against a mock answering
/// `responses` in order; the run must succeed.
fn run(
    enabled: bool,
    trusted: bool,
    extra: &str,
    responses: Vec<MockResponse>,
    task: &str,
) -> (Env, MockServer, std::process::Output) {
    let env = Env::new();
    configure(&env, enabled, trusted, extra);
    skills(&env);
    let server = MockServer::start();
    for response in responses {
        server.enqueue(response);
    }
    let out = env.run_json_against(&server, &[task]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    (env, server, out)
}

fn events(out: &std::process::Output) -> Vec<Value> {
    stdout_of(out)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn warnings(out: &std::process::Output) -> Vec<String> {
    events(out)
        .iter()
        .filter(|e| e["type"] == "warning")
        .map(|e| e["message"].as_str().unwrap().to_string())
        .collect()
}

/// The text of each message after the system prompt, as `role: text`.
fn conversation(body: &Value) -> Vec<String> {
    body["messages"].as_array().unwrap()[1..]
        .iter()
        .map(|m| {
            format!(
                "{}: {}",
                m["role"].as_str().unwrap(),
                m["content"].as_str().unwrap_or("")
            )
        })
        .collect()
}

#[test]
fn a_named_skill_joins_the_request_after_the_prompt_and_the_listing_has_names_only() {
    let (_env, server, out) = run(
        true,
        true,
        "",
        vec![chat::text_response("filled")],
        "fill this form with $pdf, please",
    );
    let body = server.requests()[0].body_json().clone();

    let prompt = system_prompt(&body);
    let listing = prompt.split("# Skills\n").nth(1).expect("a skills section");
    assert!(
        listing.contains(
            "\n- pdf: Fill PDF forms. Use when the user gives a form.\n- release: Cut a release.\n"
        ),
        "project skills first: {listing}"
    );
    assert!(
        !prompt.contains("PROCEDURE"),
        "bodies are not in the system prompt"
    );
    assert!(tool_names(&body).contains(&"skill"));

    let messages = conversation(&body);
    let at = messages
        .iter()
        .position(|m| m == "user: fill this form with $pdf, please")
        .expect("the prompt");
    let skill = &messages[at + 1];
    assert!(
        skill.starts_with("user: <skill name=\"pdf\" folder=\".cogni/skills/pdf\">\nPDF-PROCEDURE"),
        "{skill}"
    );
    assert!(
        skill.contains("- .cogni/skills/pdf/scripts/fill.py"),
        "{skill}"
    );
    assert!(
        !skill.contains("SCRIPT-CONTENT"),
        "files are listed, not read"
    );
    assert!(!messages.iter().any(|m| m.contains("RELEASE-PROCEDURE")));

    let all = events(&out);
    let named: Vec<&Value> = all.iter().filter(|e| e["type"] == "skill").collect();
    assert_eq!(named.len(), 1);
    assert_eq!(named[0]["name"], "pdf");
    assert!(named[0]["path"]
        .as_str()
        .unwrap()
        .ends_with(".cogni/skills/pdf/SKILL.md"));
    assert!(warnings(&out).is_empty(), "{:?}", warnings(&out));
}

#[test]
fn the_skill_tool_returns_the_procedure_and_lists_files_without_reading_them() {
    let (_env, server, _) = run(
        true,
        true,
        "",
        vec![
            chat::tool_calls_response(&[
                ("call_1", "skill", r#"{"name": "release"}"#),
                ("call_2", "skill", r#"{"name": "nope"}"#),
            ]),
            chat::text_response("released"),
        ],
        "cut a release",
    );
    let requests = server.requests();
    assert_eq!(
        system_prompt(requests[0].body_json()),
        system_prompt(requests[1].body_json()),
        "the listing does not change within a session"
    );
    let messages = requests[1].messages();
    let output = |id: &str| -> String {
        messages
            .iter()
            .find(|m| m["role"] == "tool" && m["tool_call_id"] == id)
            .and_then(|m| m["content"].as_str())
            .unwrap()
            .to_string()
    };
    let release = output("call_1");
    assert!(
        release.starts_with("<skill name=\"release\" folder=\"")
            && release.contains("\nRELEASE-PROCEDURE: tag and publish.\n</skill>"),
        "{release}"
    );
    assert_eq!(
        output("call_2"),
        "there is no skill `nope`; the skills are: pdf, release"
    );
}

#[test]
fn the_skill_tool_through_a_script() {
    let env = Env::new();
    configure(&env, true, true, "");
    skills(&env);
    let script = r#"
[[turns]]
[[turns.tool_calls]]
name = "skill"
arguments = { name = "pdf" }
[[turns]]
expect = "PDF-PROCEDURE"
text = "done"
"#;
    let out = env.run_script(script, "go").output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    assert_eq!(stdout_of(&out), "done\n");
}

#[test]
fn a_loaded_skill_survives_compaction() {
    // The tool call reports more tokens than the limit: history is
    // compacted before the next request.
    let (_env, server, out) = run(
        true,
        true,
        "[compaction]\ntoken_limit = 4000\n",
        vec![
            MockResponse::sse([
                chat::role(),
                chat::tool_call(0, "call_1", "skill", r#"{"name": "release"}"#),
                chat::finish("tool_calls"),
                chat::usage(9000, 5, 0),
                chat::done(),
            ]),
            chat::text_response("the summary"),
            chat::text_response("released"),
        ],
        "cut a release with $pdf",
    );
    assert!(
        events(&out).iter().any(|e| e["type"] == "compaction"),
        "compacted"
    );
    let requests = server.requests();
    assert_eq!(requests.len(), 3);
    let after = conversation(requests[2].body_json());
    assert!(after.iter().any(|m| m.contains("the summary")), "{after:?}");
    for procedure in ["PDF-PROCEDURE", "RELEASE-PROCEDURE"] {
        assert!(
            after
                .iter()
                .any(|m| m.starts_with("user: <skill") && m.contains(procedure)),
            "{procedure} kept: {after:?}"
        );
    }
    server.assert_invariants();
}

#[test]
fn untrusted_project_skills_are_ignored_with_a_warning() {
    let (env, server, out) = run(true, false, "", vec![chat::text_response("ok")], "use $pdf");
    let body = server.requests()[0].body_json().clone();
    let prompt = system_prompt(&body);
    assert!(prompt.contains("- release: Cut a release."), "{prompt}");
    assert!(!prompt.contains("- pdf:"), "{prompt}");
    assert!(!conversation(&body)
        .iter()
        .any(|m| m.contains("PDF-PROCEDURE")));
    let warnings = warnings(&out);
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    assert!(
        warnings[0].contains("not trusted") && warnings[0].contains(".cogni/skills/pdf"),
        "{warnings:?}"
    );
    let report = env.cmd().arg("skills").output().unwrap();
    assert!(
        stdout_of(&report).contains(".cogni/skills/pdf (project): this directory is not trusted"),
        "{}",
        stdout_of(&report)
    );
}

#[test]
fn a_full_listing_is_said_by_a_warning_and_by_cogni_skills() {
    let (env, server, out) = run(
        true,
        true,
        "[skills]\nmax_listing_bytes = 60\n",
        vec![chat::text_response("ok")],
        "go",
    );
    let prompt = system_prompt(server.requests()[0].body_json());
    assert!(prompt.contains("- pdf: "), "{prompt}");
    assert!(!prompt.contains("release"), "{prompt}");
    let warnings = warnings(&out);
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    assert!(
        warnings[0].starts_with("skills left out of the system prompt's listing")
            && warnings[0].contains("max_listing_bytes = 60): release;"),
        "{warnings:?}"
    );

    let report = env.cmd().arg("skills").output().unwrap();
    assert_eq!(report.status.code(), Some(0));
    let text = stdout_of(&report);
    assert!(
        text.starts_with("skills are on · the system prompt's listing takes 55 of 60 bytes"),
        "{text}"
    );
    assert!(
        text.contains("left out of the listing, which is full (they still load when named as $NAME or through the skill tool): release\n"),
        "{text}"
    );
}

#[test]
fn cogni_skills_lists_sources_precedence_and_problems() {
    let env = Env::new();
    configure(&env, false, true, "");
    skills(&env);
    let nested = env.work().join("sub/dir");
    std::fs::create_dir_all(env.work().join(".git")).unwrap();
    std::fs::create_dir_all(&nested).unwrap();
    // Nearer the working directory: wins over the repository root's.
    write_skill(
        &nested.join(".agents/skills"),
        "pdf",
        "The nearer pdf.",
        "Near.",
    );
    // The user's `release` is shadowed by nothing; a user `pdf` is.
    write_skill(
        &env.dir.path().join("home/.agents/skills"),
        "pdf",
        "The user's pdf.",
        "User.",
    );
    // Lenient: bad YAML and a name unlike the folder still load.
    let odd = env.work().join(".cogni/skills/deploy");
    std::fs::create_dir_all(&odd).unwrap();
    std::fs::write(
        odd.join("SKILL.md"),
        "---\nname: ship\ndescription: Deploy. Use when: shipping\n---\nShip it.\n",
    )
    .unwrap();
    let out = env
        .cmd()
        .args(["skills", "-C", "sub/dir"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    let text = stdout_of(&out);
    assert!(
        text.starts_with("skills are off: set `skills_enabled = true` under [features]"),
        "{text}"
    );
    let lines: Vec<&str> = text.lines().collect();
    let work = env.work();
    let shown = |p: &Path| p.display().to_string();
    for expected in [
        "pdf (project) .agents/skills/pdf".to_string(),
        "    The nearer pdf.".to_string(),
        format!("ship (project) {}", shown(&work.join(".cogni/skills/deploy"))),
        "    Deploy. Use when: shipping".to_string(),
        format!(
            "release (user) {}",
            shown(&env.dir.path().join("home/skills/release"))
        ),
        "not loaded:".to_string(),
        format!(
            "  {} (project): a skill of the same name nearer the working directory wins: .agents/skills/pdf",
            shown(&work.join(".cogni/skills/pdf"))
        ),
        format!(
            "  {} (user): a skill of the same name nearer the working directory wins: .agents/skills/pdf",
            shown(&env.dir.path().join("home/.agents/skills/pdf"))
        ),
    ] {
        assert!(lines.contains(&expected.as_str()), "{expected:?} in:\n{text}");
    }
    let problems: Vec<&&str> = lines
        .iter()
        .filter(|l| l.starts_with("    problem: "))
        .collect();
    assert_eq!(problems.len(), 2, "{text}");
    assert!(problems[0].contains("invalid YAML front matter"), "{text}");
    assert!(
        problems[1].contains("the name `ship` is not the folder's (`deploy`)"),
        "{text}"
    );
}

#[test]
fn skills_off_send_no_section_no_tool_and_no_procedure() {
    let (_env, server, out) = run(false, true, "", vec![chat::text_response("ok")], "use $pdf");
    let body = server.requests()[0].body_json().clone();
    assert!(!system_prompt(&body).contains("# Skills"));
    assert!(!tool_names(&body).contains(&"skill"));
    assert!(!conversation(&body)
        .iter()
        .any(|m| m.contains("PDF-PROCEDURE")));
    assert!(!events(&out).iter().any(|e| e["type"] == "skill"));
}

#[test]
fn the_repl_lists_skills() {
    let env = Env::new();
    configure(&env, true, true, "");
    skills(&env);
    let out = env.repl_with("/skills\n");
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    let text = stdout_of(&out);
    assert!(text.contains("skills are on"), "{text}");
    assert!(text.contains("pdf (project) .cogni/skills/pdf"), "{text}");
    assert!(text.contains("release (user) "), "{text}");
}
