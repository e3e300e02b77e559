//! `cogni review` through the real binary, with the scripted provider as
//! the model (the loopback mock where a test must see that no request was
//! sent): findings checked against the diff, deleted lines, renamed and
//! binary files, an empty change, a repository without commits, every
//! output format (JSON against docs/review.schema.json, SARIF through
//! Microsoft's SARIF Multitool from tests/sarif/), and the exit codes.
//!
//! The SARIF Multitool is installed with `npm ci` in tests/sarif (CI does
//! it); without it the SARIF files are still checked here for their
//! structure, and the validation says it was skipped, unless
//! COGNI_REQUIRE_SARIF is set: then that is a failure.

use crate::cli::{stderr_of, stdout_of, Env};
use crate::common::mock::MockServer;
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::process::Output;

pub(crate) use crate::checkpoints::git;

const LIB: &str = "fn add(a: i32, b: i32) -> i32 {\n    a + b\n}\n\nfn sub(a: i32, b: i32) -> i32 {\n    a - b\n}\n\nfn mul(a: i32, b: i32) -> i32 {\n    a * b\n}\n";

/// A file that is renamed, and changed a little.
const KEPT: &str = "pub fn f1() {}\npub fn f2() {}\npub fn f3() {}\npub fn f4() {}\npub fn f5() {}\npub fn f6() {}\n";

/// A workspace that is a repository with one commit (`lib.rs`,
/// `old_name.rs`, `gone.txt`, `logo.png`).
fn repository() -> Env {
    let env = Env::new();
    let work = env.work();
    std::fs::write(work.join("lib.rs"), LIB).unwrap();
    std::fs::write(work.join("old_name.rs"), KEPT).unwrap();
    std::fs::write(work.join("gone.txt"), "first\nsecond\n").unwrap();
    std::fs::write(work.join("logo.png"), b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR").unwrap();
    git(&work, &["init", "-q", "-b", "main"]);
    git(&work, &["add", "."]);
    git(&work, &["commit", "-qm", "one"]);
    env
}

/// The change most tests review: `add` broken (line 2), `gone.txt`
/// deleted, `old_name.rs` renamed and changed, `logo.png` changed.
fn change(env: &Env) {
    let work = env.work();
    std::fs::write(work.join("lib.rs"), LIB.replace("a + b", "a - b")).unwrap();
    std::fs::remove_file(work.join("gone.txt")).unwrap();
    git(&work, &["mv", "old_name.rs", "new_name.rs"]);
    std::fs::write(
        work.join("new_name.rs"),
        KEPT.replace("fn f4", "fn added() {}\npub fn f4"),
    )
    .unwrap();
    std::fs::write(work.join("logo.png"), b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR2").unwrap();
}

/// One `report_finding` call's arguments.
fn finding(path: &str, lines: (u32, u32), priority: u32, title: &str) -> Value {
    json!({
        "path": path,
        "start_line": lines.0,
        "end_line": lines.1,
        "priority": priority,
        "title": title,
        "body": format!("{title}: explained."),
        "confidence": 0.9
    })
}

fn calls(findings: &[Value]) -> Vec<Value> {
    findings
        .iter()
        .map(|args| json!({"name": "report_finding", "arguments": args}))
        .collect()
}

const VERDICT: &str = r#"{"verdict": "needs_changes", "explanation": "add subtracts."}"#;

/// A script: one response per finding, each call's output checked by
/// the next request to contain its text ("recorded: ..." or the reason it
/// was refused), then the final `answer`.
fn steps(env: &Env, steps: &[(Value, &str)], answer: &str) -> PathBuf {
    let mut turns = Vec::new();
    let mut expect: Option<&str> = None;
    for (i, (args, output)) in steps.iter().enumerate() {
        let mut turn = json!({
            "text": format!("Finding {i}."),
            "tool_calls": calls(std::slice::from_ref(args)),
        });
        if let Some(e) = expect {
            turn["expect"] = json!(e);
        }
        turns.push(turn);
        expect = Some(output);
    }
    let mut last = json!({"text": answer});
    if let Some(e) = expect {
        last["expect"] = json!(e);
    }
    turns.push(last);
    env.script_file("review.toml", Value::Array(turns))
}

/// `cogni review --script SCRIPT ARGS` in the workspace.
fn review(env: &Env, script: &Path, args: &[&str]) -> Output {
    env.cmd()
        .arg("review")
        .arg("--script")
        .arg(script)
        .args(args)
        .output()
        .unwrap()
}

#[test]
fn findings_on_the_diff_are_kept_and_the_rest_refused_with_the_reason() {
    let env = repository();
    change(&env);
    let script = steps(
        &env,
        &[
            (finding("lib.rs", (2, 2), 1, "add subtracts"), "recorded: P1 at lib.rs:2"),
            (
                finding("src/elsewhere.rs", (1, 1), 2, "not in the change"),
                "finding refused: `src/elsewhere.rs` is not part of this review's scope",
            ),
            (
                finding("lib.rs", (9, 11), 2, "mul was not changed"),
                "lines 9-11 of `lib.rs` (new side) are not all in this review's diff; the lines it shows on that side are: 1-5",
            ),
            (finding("../outside.rs", (1, 1), 2, "escape"), "contains `..`"),
            (finding("/etc/passwd", (1, 1), 2, "absolute"), "is an absolute path"),
            (
                {
                    let mut stale = finding("lib.rs", (2, 2), 2, "a fix that does not apply");
                    stale["fix"] = json!(
                        "*** Begin Patch\n*** Update File: lib.rs\n@@\n-    a * 7\n+    a * 8\n*** End Patch"
                    );
                    stale
                },
                "the fix does not apply to `lib.rs` as it is now",
            ),
        ],
        VERDICT,
    );
    let out = review(&env, &script, &[]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    let stdout = stdout_of(&out);
    assert!(
        stdout.starts_with(
            "Review of the uncommitted changes (staged, unstaged and untracked): needs changes\n"
        ),
        "{stdout}"
    );
    assert!(
        stdout.contains("add subtracts."),
        "the explanation: {stdout}"
    );
    assert!(
        stdout.contains("\nlib.rs\n  P1 add subtracts · line 2 · confidence 0.90\n"),
        "{stdout}"
    );
    assert!(stdout.contains("2 │     a - b"), "the code line: {stdout}");
    assert!(!stdout.contains("mul was not changed"), "{stdout}");
    assert!(stdout.contains("1 finding (P1: 1)"), "{stdout}");
}

/// `cogni review ... --format json -o FILE`'s report, checked against
/// docs/review.schema.json.
fn json_report(env: &Env, script: &Path, args: &[&str]) -> (Output, Value) {
    let path = env.dir.path().join("review.json");
    let out = env
        .cmd()
        .arg("review")
        .arg("--script")
        .arg(script)
        .args(args)
        .args(["--format", "json", "-o"])
        .arg(&path)
        .output()
        .unwrap();
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| {
        panic!("no report ({e}): {}", stderr_of(&out));
    });
    let report: Value = serde_json::from_str(&text).unwrap();
    valid_against_schema(&report);
    (out, report)
}

pub(crate) fn valid_against_schema(report: &Value) {
    let schema_path = Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/review.schema.json");
    let schema: Value =
        serde_json::from_str(&std::fs::read_to_string(schema_path).unwrap()).unwrap();
    let validator = jsonschema::validator_for(&schema).unwrap();
    let errors: Vec<String> = validator
        .iter_errors(report)
        .map(|e| format!("{}: {e}", e.instance_path()))
        .collect();
    assert!(errors.is_empty(), "{errors:#?}\n{report:#}");
}

#[test]
fn deleted_lines_renamed_and_binary_files() {
    let env = repository();
    change(&env);
    let mut deleted = finding("lib.rs", (2, 2), 2, "the old line");
    deleted["side"] = json!("old");
    let mut deleted_file = finding("gone.txt", (1, 2), 3, "still needed");
    deleted_file["side"] = json!("old");
    let script = steps(
        &env,
        &[
            (deleted, "recorded: P2 at lib.rs:2 (deleted lines)"),
            (deleted_file, "recorded: P3 at gone.txt:1-2 (deleted lines)"),
            (
                finding("new_name.rs", (4, 4), 2, "a new function"),
                "recorded",
            ),
            (
                finding("logo.png", (0, 0), 3, "the logo changed"),
                "recorded: P3 at logo.png",
            ),
            (
                finding("old_name.rs", (1, 1), 3, "old path"),
                "`old_name.rs` is now `new_name.rs`",
            ),
            (
                finding("logo.png", (1, 1), 3, "a line of a picture"),
                "`logo.png` is a binary file: it has no lines in this diff",
            ),
            (
                finding("gone.txt", (1, 1), 3, "new side of a deleted file"),
                "set side \"old\"",
            ),
            (finding("lib.rs", (2, 2), 2, "the old line"), "recorded"),
            (
                finding("lib.rs", (2, 2), 2, "the old line"),
                "reported already",
            ),
        ],
        VERDICT,
    );
    let (out, report) = json_report(&env, &script, &[]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    let found: Vec<(&str, &str, u64, u64)> = report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            (
                f["path"].as_str().unwrap(),
                f["side"].as_str().unwrap(),
                f["start_line"].as_u64().unwrap(),
                f["end_line"].as_u64().unwrap(),
            )
        })
        .collect();
    let mut sorted = found.clone();
    sorted.sort();
    assert_eq!(
        sorted,
        [
            ("gone.txt", "old", 1, 2),
            ("lib.rs", "new", 2, 2),
            ("lib.rs", "old", 2, 2),
            ("logo.png", "new", 0, 0),
            ("new_name.rs", "new", 4, 4),
        ]
    );
    let by_path = |p: &str| {
        report["findings"]
            .as_array()
            .unwrap()
            .iter()
            .find(|f| f["path"] == p && f["side"] == "old")
            .or_else(|| {
                report["findings"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .find(|f| f["path"] == p)
            })
            .unwrap()
            .clone()
    };
    assert_eq!(by_path("lib.rs")["anchor_line"], 2);
    assert_eq!(by_path("lib.rs")["code"][0]["text"], "    a + b");
    assert_eq!(by_path("new_name.rs")["old_path"], "old_name.rs");
    assert_eq!(report["verdict"], "needs_changes");
    assert_eq!(report["verdict_derived"], false);
    assert_eq!(report["scope"], "uncommitted");
}

#[test]
fn an_empty_change_sends_no_request_and_exits_zero() {
    let env = repository();
    let server = MockServer::start();
    let sarif = env.dir.path().join("empty.sarif");
    let out = env
        .cmd()
        .env("OPENAI_BASE_URL", server.base_url())
        .env("OPENAI_API_KEY", "sk-test")
        .args(["review", "--model", "gpt-4.1", "--format", "sarif", "-o"])
        .arg(&sarif)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    assert!(
        stderr_of(&out).contains("Nothing to review: the uncommitted changes (staged, unstaged and untracked) hold no change."),
        "{}",
        stderr_of(&out)
    );
    assert_eq!(server.request_count(), 0, "no model request");
    let log: Value = serde_json::from_str(&std::fs::read_to_string(&sarif).unwrap()).unwrap();
    assert_eq!(log["runs"][0]["results"], json!([]));
    validate_sarif(&sarif, "an_empty_change_sends_no_request_and_exits_zero");
    // Without a key there is nothing to send either: still 0.
    let out = env
        .cmd()
        .args(["review", "--base", "main"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    assert!(
        stdout_of(&out).contains("Nothing to review"),
        "{}",
        stdout_of(&out)
    );
}

#[test]
fn a_repository_without_commits_is_reviewed_against_the_empty_tree() {
    let env = Env::new();
    let work = env.work();
    git(&work, &["init", "-q"]);
    std::fs::write(work.join("main.py"), "print('hi')\nprint(1/0)\n").unwrap();
    git(&work, &["add", "main.py"]);
    std::fs::write(work.join("notes.txt"), "untracked\n").unwrap();
    let script = steps(
        &env,
        &[(
            finding("main.py", (2, 2), 0, "divides by zero"),
            "recorded: P0 at main.py:2",
        )],
        "Division by zero on line 2.",
    );
    let (out, report) = json_report(&env, &script, &["--fail-on", "P1"]);
    assert_eq!(
        out.status.code(),
        Some(1),
        "--fail-on P1 and a P0: {}",
        stderr_of(&out)
    );
    assert_eq!(report["files"], 2);
    assert_eq!(report["added"], 3);
    assert_eq!(report["verdict"], "needs_changes", "derived from the P0");
    assert_eq!(report["verdict_derived"], true);
    assert_eq!(report["explanation"], "Division by zero on line 2.");
    let out = env
        .cmd()
        .args(["review", "--base", "main"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr_of(&out).contains("no commits yet"),
        "{}",
        stderr_of(&out)
    );
}

#[test]
fn base_commit_and_files_scopes() {
    let env = repository();
    let work = env.work();
    git(&work, &["checkout", "-q", "-b", "topic"]);
    std::fs::write(work.join("lib.rs"), LIB.replace("a * b", "a * b * 1")).unwrap();
    git(&work, &["commit", "-qam", "two"]);
    std::fs::write(work.join("scratch.txt"), "not in --base\n").unwrap();
    let s = steps(
        &env,
        &[(finding("lib.rs", (10, 10), 3, "a needless * 1"), "recorded")],
        VERDICT,
    );
    let (out, report) = json_report(&env, &s, &["--base", "main"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    assert_eq!(report["scope"], json!({"base": "main"}));
    assert_eq!(report["files"], 1, "scratch.txt is not committed");
    assert_eq!(report["head"].as_str().unwrap().len(), 40);
    let (_, report) = json_report(&env, &s, &["--commit", "HEAD"]);
    assert_eq!(report["findings"].as_array().unwrap().len(), 1);
    let s = steps(
        &env,
        &[(finding("lib.rs", (9, 11), 2, "mul as a whole"), "recorded")],
        VERDICT,
    );
    let (_, report) = json_report(&env, &s, &["security", "--files", "lib.rs"]);
    assert_eq!(report["scope"], json!({"files": ["lib.rs"]}));
    assert_eq!(report["findings"][0]["code"].as_array().unwrap().len(), 3);
    let out = env
        .cmd()
        .args(["review", "--base", "main", "--commit", "HEAD"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "one scope at most");
    let out = env
        .cmd()
        .args(["review", "--base", "nope"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr_of(&out).contains("no merge base of nope"),
        "{}",
        stderr_of(&out)
    );
}

/// `--format F` on stdout.
fn formatted(env: &Env, script: &Path, format: &str) -> String {
    let out = review(env, script, &["--format", format]);
    assert_eq!(out.status.code(), Some(0), "{format}: {}", stderr_of(&out));
    stdout_of(&out)
}

#[test]
fn every_format_carries_the_findings() {
    let env = repository();
    change(&env);
    let mut with_fix = finding("lib.rs", (2, 2), 1, "add subtracts");
    with_fix["fix"] = json!(
        "*** Begin Patch\n*** Update File: lib.rs\n@@\n fn add(a: i32, b: i32) -> i32 {\n-    a - b\n+    a + b\n*** End Patch"
    );
    let mut old_side = finding("lib.rs", (2, 2), 2, "the old line was right");
    old_side["side"] = json!("old");
    let findings = [
        with_fix,
        old_side,
        finding("new_name.rs", (3, 5), 3, "naming"),
        finding("logo.png", (0, 0), 2, "the logo"),
    ];
    let s = env.script_file(
        "review.toml",
        json!([
            {"text": "All at once.", "tool_calls": calls(&findings)},
            {"text": VERDICT},
        ]),
    );

    let md = formatted(&env, &s, "markdown");
    assert!(md.starts_with("## cogni review: needs changes\n"), "{md}");
    assert!(md.contains("### `lib.rs`"), "{md}");
    assert!(md.contains("#### P1 add subtracts"), "{md}");
    assert!(md.contains("```diff\n--- lib.rs\n+++ lib.rs\n"), "{md}");

    let gh: Value = serde_json::from_str(&formatted(&env, &s, "github")).unwrap();
    let comments = gh["comments"].as_array().unwrap();
    assert_eq!(comments.len(), 3, "{gh:#}");
    let fix = comments
        .iter()
        .find(|c| c["line"] == 2 && c["side"] == "RIGHT")
        .unwrap();
    assert!(
        fix["body"]
            .as_str()
            .unwrap()
            .contains("```suggestion\n    a + b\n```"),
        "{fix:#}"
    );
    assert!(comments.iter().any(|c| c["side"] == "LEFT"), "{gh:#}");
    assert!(
        gh["body"].as_str().unwrap().contains("**P2 the logo**"),
        "{gh:#}"
    );

    let gitlab: Value = serde_json::from_str(&formatted(&env, &s, "gitlab")).unwrap();
    let issues = gitlab.as_array().unwrap();
    assert_eq!(issues.len(), 4);
    let p1 = issues.iter().find(|i| i["check_name"] == "P1").unwrap();
    assert_eq!(p1["severity"], "critical");
    assert_eq!(
        p1["location"],
        json!({"path": "lib.rs", "lines": {"begin": 2, "end": 2}})
    );
    assert_eq!(p1["fingerprint"].as_str().unwrap().len(), 32);

    let terminal = formatted(&env, &s, "terminal");
    assert!(terminal.contains("suggested fix:"), "{terminal}");
    assert!(
        terminal.contains("P2 the old line was right · line 2 (deleted)"),
        "{terminal}"
    );
    assert!(!terminal.contains('\u{1b}'), "no colors off a terminal");

    let (_, report) = json_report(&env, &s, &[]);
    assert_eq!(report["findings"].as_array().unwrap().len(), 4);
    // A saved report in another format: the same, with no model.
    let saved = env.dir.path().join("review.json");
    let again = env
        .cmd()
        .args([
            "review",
            "--format",
            "markdown",
            "--fail-on",
            "P1",
            "--from",
        ])
        .arg(&saved)
        .output()
        .unwrap();
    assert_eq!(again.status.code(), Some(1), "{}", stderr_of(&again));
    assert_eq!(stdout_of(&again), md);
    let not_a_report = env.write("other.json", "{\"schema_version\": 9}");
    let out = env
        .cmd()
        .args(["review", "--from"])
        .arg(&not_a_report)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr_of(&out).contains("not a review report of schema version 1"));
    let out = env
        .cmd()
        .args(["review", "--base", "main", "--from"])
        .arg(&saved)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "--from reviews nothing again");
    let replacements = &report["findings"][0]["fix"]["replacements"];
    assert_eq!(
        replacements,
        &json!([{"start_line": 2, "end_line": 2, "text": "    a + b"}])
    );

    let sarif = env.dir.path().join("review.sarif");
    let out = review(
        &env,
        &s,
        &["--format", "sarif", "-o", sarif.to_str().unwrap()],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    assert!(stdout_of(&out).is_empty(), "-o takes the report off stdout");
    assert!(
        stderr_of(&out).contains("review: needs_changes (4 findings (P1: 1, P2: 2, P3: 1)); wrote"),
        "{}",
        stderr_of(&out)
    );
    let log: Value = serde_json::from_str(&std::fs::read_to_string(&sarif).unwrap()).unwrap();
    let results = log["runs"][0]["results"].as_array().unwrap();
    assert_eq!(results.len(), 4);
    assert!(results
        .iter()
        .all(|r| r["partialFingerprints"]["cogniFindingHash/v1"].is_string()));
    assert!(results
        .iter()
        .any(
            |r| r["fixes"][0]["artifactChanges"][0]["replacements"][0]["insertedContent"]["text"]
                == "    a + b"
        ));
    validate_sarif(&sarif, "every_format_carries_the_findings");
}

#[test]
fn fail_on_gives_exit_one_and_errors_keep_their_codes() {
    let env = repository();
    change(&env);
    let s = steps(
        &env,
        &[(finding("lib.rs", (2, 2), 2, "a P2"), "recorded")],
        VERDICT,
    );
    for (fail_on, code) in [("P1", 0), ("P2", 1), ("p3", 1), ("0", 0)] {
        let out = review(&env, &s, &["--fail-on", fail_on]);
        assert_eq!(
            out.status.code(),
            Some(code),
            "--fail-on {fail_on}: {}",
            stderr_of(&out)
        );
    }
    let out = review(&env, &s, &["--fail-on", "P9"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr_of(&out).contains("use P0, P1, P2 or P3"),
        "{}",
        stderr_of(&out)
    );
    // A budget that runs out is exit 4, whatever --fail-on says; the
    // findings reported before are written.
    let out = review(&env, &s, &["--fail-on", "P3", "--max-tokens", "10"]);
    assert_eq!(out.status.code(), Some(4), "{}", stderr_of(&out));
    assert!(
        stdout_of(&out).contains("The review did not finish"),
        "{}",
        stdout_of(&out)
    );
    let out = review(&env, &s, &["--max-cost", "-1"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr_of(&out));
}

/// The Multitool's binary, when installed (tests/sarif: `npm ci`).
fn multitool() -> Option<PathBuf> {
    let bin = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/sarif/node_modules/@microsoft/sarif-multitool-linux/Sarif.Multitool");
    bin.is_file().then_some(bin)
}

/// `sarif-multitool validate FILE` (its SARIF rules and GitHub's) reports
/// no error; without the Multitool this says it was skipped, unless
/// COGNI_REQUIRE_SARIF is set.
pub(crate) fn validate_sarif(file: &Path, test: &str) {
    let Some(bin) = multitool() else {
        let why = "the SARIF Multitool is not installed (`npm ci` in tests/sarif)";
        if std::env::var_os("COGNI_REQUIRE_SARIF").is_some() {
            panic!("{test}: {why}, and COGNI_REQUIRE_SARIF is set (see .ci/run)");
        }
        eprintln!("SKIPPED the SARIF Multitool's validation in {test}: {why}");
        return;
    };
    let out_file = file.with_extension("validation.sarif");
    let out = std::process::Command::new(&bin)
        .arg("validate")
        .arg(file)
        .arg("--output")
        .arg(&out_file)
        .args(["--log", "ForceOverwrite", "--rule-kind", "Sarif;Gh"])
        .env("DOTNET_CLI_TELEMETRY_OPTOUT", "1")
        .output()
        .unwrap();
    let shown = format!("{}{}", stdout_of(&out), stderr_of(&out));
    assert!(out.status.success(), "sarif-multitool validate: {shown}");
    let log: Value = serde_json::from_str(&std::fs::read_to_string(&out_file).unwrap()).unwrap();
    let errors: Vec<&Value> = log["runs"][0]["results"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["level"] == "error")
        .collect();
    assert!(errors.is_empty(), "SARIF errors: {errors:#?}\n{shown}");
}
