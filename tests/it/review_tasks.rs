//! Review tasks in a task file (`review = { base = "main" }`): the
//! attempt reviews its worktree read-only, the checks assert on the
//! findings and the verdict, and results.json, junit.xml and report.html
//! carry the findings.

use crate::cli::{stderr_of, Env};
use crate::review::git;
use crate::runner::assert_valid;
use serde_json::{json, Value};

const LIB: &str = "fn add(a: i32, b: i32) -> i32 {\n    a + b\n}\n\nfn mul(a: i32, b: i32) -> i32 {\n    a * b\n}\n";

/// A repository whose branch `topic` (checked out) breaks `add` on `main`.
fn repository(env: &Env) {
    let work = env.work();
    std::fs::write(work.join("lib.rs"), LIB).unwrap();
    git(&work, &["init", "-q", "-b", "main"]);
    git(&work, &["add", "."]);
    git(&work, &["commit", "-qm", "one"]);
    git(&work, &["checkout", "-q", "-b", "topic"]);
    std::fs::write(work.join("lib.rs"), LIB.replace("a + b", "a - b")).unwrap();
    git(&work, &["commit", "-qam", "break add"]);
}

const TASKS: &str = r#"
[[agents]]
id = "offline"
provider = "scripted"
model = "scripted"

[[tasks]]
id = "catches-the-bug"
review = { base = "main" }
prompt = "arithmetic"
script = "review.toml"
checks = [
  { finding = "lib.rs", lines = [2, 2], priority = "P1" },
  { min_findings = 1, max_findings = 1 },
  { verdict = "needs_changes" },
]

[[tasks]]
id = "expects-another-finding"
review = { base = "main" }
script = "review.toml"
checks = [{ finding = "lib.rs", lines = [5, 7] }, { max_findings = 0, priority = "P1" }]

[[tasks]]
id = "nothing-to-review"
review = { uncommitted = true }
script = "review.toml"
checks = [{ max_findings = 0 }, { verdict = "correct" }]
"#;

#[test]
fn review_tasks_check_findings_and_report_them() {
    let env = Env::new();
    repository(&env);
    let finding = json!({
        "path": "lib.rs", "start_line": 2, "end_line": 2, "priority": 1,
        "title": "add subtracts", "body": "It returns a - b.", "confidence": 0.9
    });
    env.script_file(
        "review.toml",
        json!([
            {"text": "Reviewing.", "tool_calls": [{"name": "report_finding", "arguments": finding}]},
            {"expect": "recorded: P1 at lib.rs:2",
             "text": "{\"verdict\": \"needs_changes\", \"explanation\": \"add subtracts.\"}"},
        ]),
    );
    let (out, results) = env.run_tasks(TASKS);
    assert_eq!(
        out.status.code(),
        Some(1),
        "one task fails: {}",
        stderr_of(&out)
    );
    assert_valid(&results);
    let attempt = |id: &str| -> Value {
        results["tasks"]
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["id"] == id)
            .unwrap()["attempts"][0]
            .clone()
    };
    let caught = attempt("catches-the-bug");
    assert_eq!(caught["status"], "passed", "{caught:#}");
    let review = &caught["review"];
    assert_eq!(review["verdict"], "needs_changes");
    assert_eq!(review["findings"][0]["title"], "add subtracts");
    assert_eq!(review["scope"], json!({"base": "main"}));
    crate::review::valid_against_schema(review);
    let kinds: Vec<&str> = caught["checks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["kind"].as_str().unwrap())
        .collect();
    assert_eq!(kinds, ["finding", "findings", "verdict"]);

    let missed = attempt("expects-another-finding");
    assert_eq!(missed["status"], "failed");
    let failed: Vec<&Value> = missed["checks"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["passed"] == false)
        .collect();
    assert_eq!(failed.len(), 2, "{missed:#}");
    assert_eq!(
        failed[0]["description"],
        "finding lib.rs:5-7 at P3 or above"
    );
    assert!(
        failed[0]["output_tail"]
            .as_str()
            .unwrap()
            .contains("the review reported: P1 lib.rs:2 (add subtracts)"),
        "{missed:#}"
    );

    let nothing = attempt("nothing-to-review");
    assert_eq!(nothing["status"], "passed", "{nothing:#}");
    assert_eq!(nothing["model_requests"], 0);
    assert!(nothing["final_answer"]
        .as_str()
        .unwrap()
        .starts_with("Nothing to review"));

    let out_dir = env.dir.path().join("out");
    let junit = std::fs::read_to_string(out_dir.join("junit.xml")).unwrap();
    assert!(
        junit.contains("review: needs_changes (1 finding (P1: 1))"),
        "{junit}"
    );
    assert!(junit.contains("- P1 lib.rs:2: add subtracts"), "{junit}");
    let html = std::fs::read_to_string(out_dir.join("report.html")).unwrap();
    assert!(html.contains("<h2>Review findings</h2>"), "{html}");
    assert!(html.contains("<summary>add subtracts</summary>"));
}

#[test]
fn review_tasks_are_validated() {
    let env = Env::new();
    env.script_file("review.toml", json!([{"text": "x"}]));
    let file = env.write(
        "bad.toml",
        r#"
[[agents]]
id = "offline"
provider = "scripted"
script = "review.toml"

[[tasks]]
id = "two-scopes"
review = { base = "main", commit = "HEAD" }

[[tasks]]
id = "copied"
review = { uncommitted = true }
workspace = "copy"
checks = [{ finding = "a.rs", lines = [3, 1], priority = "P7" }, { verdict = "maybe" }]

[[tasks]]
id = "not-a-review"
prompt = "do it"
checks = [{ min_findings = 2, max_findings = 1 }]
"#,
    );
    let out = env.cmd().arg("validate").arg(&file).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    let stderr = stderr_of(&out);
    for problem in [
        "tasks[0].review: a review takes exactly one of",
        "tasks[1].workspace: a review reads the repository's history",
        "tasks[1].checks[0].lines: [START, END]",
        "tasks[1].checks[0].priority: `P7`: use P0, P1, P2 or P3",
        "tasks[1].checks[1].verdict: `maybe`",
        "tasks[2].checks[0]: only a review task has findings",
        "tasks[2].checks[0]: min_findings 2 is more than max_findings 1",
    ] {
        assert!(stderr.contains(problem), "{problem}: {stderr}");
    }
}
