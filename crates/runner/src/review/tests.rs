use super::*;
use cogni_tools::review::diff::{new_file, parse};
use cogni_tools::review::finding::{check, fix, FindingArgs};
use cogni_tools::review::ScopeDiff;
use std::path::PathBuf;

fn change() -> Change {
    let raw = b":100644 100644 1 2 M\0src/a.rs\0:100644 100644 3 4 M\0b.rs\0";
    let patch = "diff --git a/src/a.rs b/src/a.rs
--- a/src/a.rs
+++ b/src/a.rs
@@ -1,3 +1,3 @@
 one
-two
+2
 three
diff --git a/b.rs b/b.rs
--- a/b.rs
+++ b/b.rs
@@ -1 +1 @@
-x
+y
";
    let mut files = parse(raw, patch.as_bytes()).unwrap();
    files.push(new_file("logo.png".into(), Ok(b"\0".to_vec())));
    Change {
        diff: ScopeDiff { files },
        root: PathBuf::from("/repo"),
        base: Some("abc".into()),
        head: Some("def".into()),
    }
}

fn finding(path: &str, start: i64, end: i64, priority: i64, title: &str) -> Finding {
    let args = FindingArgs {
        path: path.into(),
        start_line: start,
        end_line: end,
        priority,
        title: title.into(),
        body: "Because <b>@team</b> said so.".into(),
        confidence: 0.5,
        side: None,
        fix: None,
    };
    check(&args, &change().diff, "").unwrap()
}

fn review(findings: Vec<Finding>, answer: &str) -> Review {
    Review::of(&change(), &Scope::Base("main".into()), findings, answer)
}

#[test]
fn the_verdict_is_the_answer_or_comes_from_the_findings() {
    let r = review(
        vec![finding("b.rs", 1, 1, 3, "nit")],
        "```json\n{\"verdict\": \"needs_changes\", \"explanation\": \"Fix it.\"}\n```",
    );
    assert_eq!(
        (r.verdict, r.explanation.as_str()),
        (Verdict::NeedsChanges, "Fix it.")
    );
    assert!(!r.verdict_derived);
    let r = review(vec![finding("b.rs", 1, 1, 3, "nit")], "Looks fine to me.");
    assert_eq!(r.verdict, Verdict::Correct);
    assert!(r.verdict_derived);
    assert_eq!(r.explanation, "Looks fine to me.");
    let r = review(
        vec![finding("b.rs", 1, 1, 1, "bug")],
        "{\"verdict\": \"maybe\"}",
    );
    assert_eq!(r.verdict, Verdict::NeedsChanges, "a P1 finding");
    assert_eq!(r.at_or_above(1), 1);
    assert_eq!(r.at_or_above(0), 0);
}

#[test]
fn findings_are_ordered_by_file_then_severity_then_line() {
    let r = review(
        vec![
            finding("b.rs", 1, 1, 2, "b"),
            finding("src/a.rs", 3, 3, 2, "a3"),
            finding("src/a.rs", 2, 2, 2, "a2"),
            finding("src/a.rs", 1, 1, 0, "a1"),
        ],
        "",
    );
    let order: Vec<&str> = r.findings.iter().map(|f| f.title.as_str()).collect();
    assert_eq!(order, ["a1", "a2", "a3", "b"]);
}

#[test]
fn a_turn_reports_unless_it_failed() {
    let turn = |outcome, text: &str| TurnResult {
        outcome,
        final_text: text.into(),
        tool_calls: Vec::new(),
        iterations: 1,
        usage: Default::default(),
        limit: None,
        reason: None,
    };
    assert!(reported(&turn(TurnOutcome::Done, "x")));
    assert!(reported(&turn(TurnOutcome::InvalidOutput, "plain text")));
    let verdict = "{\"verdict\": \"correct\", \"explanation\": \"ok\"}";
    assert!(!reported(&turn(TurnOutcome::InvalidOutput, verdict)));
    assert!(!reported(&turn(TurnOutcome::BudgetExceeded, "")));
}

#[test]
fn sarif_has_a_rule_per_priority_regions_fingerprints_and_fixes() {
    let mut f = finding("src/a.rs", 2, 2, 1, "Wrong value");
    f.fix = Some(
        fix(
            "*** Begin Patch\n*** Update File: src/a.rs\n@@\n-2\n+two\n*** End Patch",
            "src/a.rs",
            "one\n2\nthree\n",
        )
        .unwrap(),
    );
    let whole = finding("logo.png", 0, 0, 3, "Too big");
    let log: Value = serde_json::from_str(&sarif::sarif(&review(vec![f, whole], ""))).unwrap();
    let run = &log["runs"][0];
    let rules: Vec<&str> = run["tool"]["driver"]["rules"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["id"].as_str().unwrap())
        .collect();
    assert_eq!(rules, ["P0", "P1", "P2", "P3"]);
    let first = &run["results"][0];
    assert_eq!(first["ruleId"], "P1");
    assert_eq!(first["level"], "error");
    let location = &first["locations"][0]["physicalLocation"];
    assert_eq!(location["artifactLocation"]["uri"], "src/a.rs");
    assert_eq!(location["region"]["startLine"], 2);
    assert_eq!(location["region"]["snippet"]["text"], "2");
    assert_eq!(
        first["partialFingerprints"][sarif::FINGERPRINT_KEY]
            .as_str()
            .unwrap()
            .len(),
        32
    );
    let replacement = &first["fixes"][0]["artifactChanges"][0]["replacements"][0];
    assert_eq!(replacement["deletedRegion"]["startLine"], 2);
    assert_eq!(replacement["insertedContent"]["text"], "two");
    let second = &run["results"][1];
    assert_eq!(second["level"], "note");
    assert_eq!(
        second["locations"][0]["physicalLocation"]["region"]["startLine"],
        1
    );
    assert_eq!(sarif::uri("dir/a b#1.rs"), "dir/a%20b%231.rs");
}

use serde_json::Value;

#[test]
fn markdown_and_github_keep_html_and_mentions_out() {
    let r = review(
        vec![
            finding("src/a.rs", 1, 3, 1, "Broken `thing`"),
            finding("logo.png", 0, 0, 2, "Too big"),
        ],
        "{\"verdict\": \"needs_changes\", \"explanation\": \"See <below>.\"}",
    );
    let md = markdown::markdown(&r);
    assert!(
        md.starts_with("## cogni review: needs changes\n\nSee &lt;below&gt;.\n"),
        "{md}"
    );
    assert!(md.contains("2 findings (P1: 1, P2: 1) in 3 files"), "{md}");
    assert!(md.contains("### `src/a.rs`"), "{md}");
    assert!(
        md.contains("Because &lt;b&gt;&#64;team&lt;/b&gt; said so."),
        "{md}"
    );
    assert!(
        md.contains("```text\n1 | one\n2 | 2\n3 | three\n```"),
        "{md}"
    );
    let gh: Value = serde_json::from_str(&markdown::github(&r)).unwrap();
    assert_eq!(gh["event"], "COMMENT");
    assert_eq!(gh["commit_id"], "def");
    let comments = gh["comments"].as_array().unwrap();
    assert_eq!(comments.len(), 1, "the whole-file finding goes to the body");
    assert_eq!(comments[0]["path"], "src/a.rs");
    assert_eq!(comments[0]["start_line"], 1);
    assert_eq!(comments[0]["line"], 3);
    assert_eq!(comments[0]["side"], "RIGHT");
    assert!(gh["body"]
        .as_str()
        .unwrap()
        .contains("**P2 Too big** (`logo.png`)"));
}

#[test]
fn any_config_becomes_a_read_only_review() {
    use cogni_protocol::{ApprovalPolicy, EditTool, SandboxMode};
    let mut info = cogni_provider::ProviderInfo::new("p", "", cogni_provider::WireApi::Chat);
    info.default_model = Some("m".into());
    let mut config = SessionConfig::new(info, PathBuf::from("/repo"));
    config.sandbox_policy.mode = SandboxMode::DangerFullAccess;
    config.approval_policy = ApprovalPolicy::Never;
    config.tool_config.enabled = vec!["write_file".into(), "shell".into()];
    config.features.web_search = true;
    config.enable_plan = true;
    config.run.checkpoints = Some(PathBuf::from("/home/u/.cogni/checkpoints"));
    for (confined, shell) in [(true, true), (false, false)] {
        let mut c = config.clone();
        configure(&mut c, confined);
        assert_eq!(c.sandbox_policy.mode, SandboxMode::ReadOnly);
        assert_eq!(c.approval_policy, ApprovalPolicy::Untrusted);
        let mut tools = vec!["read_file", "list_dir", "grep", "glob"];
        if shell {
            tools.push("shell");
        }
        assert_eq!(c.tool_config.enabled, tools);
        assert_eq!(c.tool_config.edit_tool, Some(EditTool::None));
        assert!(!c.tool_config.web_fetch.enabled && !c.features.web_search);
        assert!(c.delegation.is_none() && c.run.checkpoints.is_none() && !c.enable_plan);
        assert_eq!(c.output_schema, Some(verdict_schema()));
    }
}
