//! report.html and exported sessions in a real browser: Debian's
//! `chromium`, headless, `--dump-dom` after the page's scripts ran; the
//! tests assert on the DOM that the transcripts and the failure are there.
//!
//! Without chromium the tests skip and say so (past the harness's
//! capture), unless `COGNI_REQUIRE_BROWSER` is set: then a missing browser
//! is a failure (.ci/run installs chromium and sets it).

use crate::cli::{stderr_of, Env};
use crate::runner::{assert_code, Tasks, OFFLINE_AGENT};
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// The browser, or `None` (after saying why) when the test may skip.
fn chromium(test: &str) -> Option<PathBuf> {
    let found = ["/usr/bin/chromium", "/usr/bin/chromium-browser"]
        .iter()
        .map(PathBuf::from)
        .find(|p| p.is_file());
    if found.is_none() {
        assert!(
            std::env::var_os("COGNI_REQUIRE_BROWSER").is_none(),
            "{test}: COGNI_REQUIRE_BROWSER is set but chromium is not installed \
             (apt-get install -y chromium)"
        );
        let _ = writeln!(
            std::io::stderr(),
            "SKIPPED {test}: chromium is not installed (apt-get install -y chromium; set \
             COGNI_REQUIRE_BROWSER=1 to fail instead)"
        );
    }
    found
}

/// The DOM of `url` after load, as headless chromium serialises it.
fn dump_dom(browser: &Path, url: &str) -> String {
    let profile = tempfile::tempdir().unwrap();
    let out = assert_cmd::Command::new(browser)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
        ])
        .arg(format!("--user-data-dir={}", profile.path().display()))
        .arg("--dump-dom")
        .arg(url)
        .timeout(Duration::from_secs(120))
        .output()
        .unwrap();
    assert!(out.status.success(), "chromium failed: {}", stderr_of(&out));
    let dom = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        dom.contains("<html"),
        "no DOM from {url}: {}",
        stderr_of(&out)
    );
    dom
}

fn file_url(path: &Path, fragment: &str) -> String {
    format!("file://{}{fragment}", path.display())
}

/// The part of `dom` from the attempt block `a<n>` to its data.
fn attempt(dom: &str, n: usize) -> &str {
    let start = dom
        .find(&format!("<details id=\"a{n}\""))
        .unwrap_or_else(|| panic!("no attempt {n} in the DOM"));
    let end = dom[start..]
        .find(&format!("id=\"t{n}\""))
        .map_or(dom.len(), |e| start + e);
    &dom[start..end]
}

/// A run of two tasks: `good` passes, `bad` runs a failing command, says
/// it is fine, and fails its check.
fn failing_and_passing_run() -> Tasks {
    let t = Tasks::new();
    t.script(
        "good",
        "[[turns]]\ntext = \"Writing.\"\n[[turns.tool_calls]]\nname = \"shell\"\n\
         arguments = { command = \"printf hello > out.txt\" }\n[[turns]]\ntext = \"Done: hello.\"\n",
    );
    t.script(
        "bad",
        "[[turns]]\ntext = \"Running the tests.\"\n[[turns.tool_calls]]\nname = \"shell\"\n\
         arguments = { command = \"echo 'test add ... FAILED'; exit 1\" }\n\
         [[turns]]\ntext = \"I think it is fine.\"\n",
    );
    t.file(&format!(
        r#"{OFFLINE_AGENT}
[[tasks]]
id = "good"
prompt = "write hello"
script = "scripts/good.toml"
checks = [{{ command = "test \"$(cat out.txt)\" = hello" }}]

[[tasks]]
id = "bad"
prompt = "make the tests pass"
script = "scripts/bad.toml"
checks = [{{ command = "echo 'assertion failed: add(2,2) == 4'; exit 1" }}]
"#
    ));
    let out = t.run(&[]);
    assert_code(&out, 1);
    t
}

#[test]
fn the_report_shows_the_failing_transcript_open_at_its_failure() {
    let Some(browser) = chromium("the_report_shows_the_failing_transcript_open_at_its_failure")
    else {
        return;
    };
    let t = failing_and_passing_run();
    let report = t.out().join("report.html");
    let dom = dump_dom(&browser, &file_url(&report, ""));
    assert!(dom.contains("data-render-ms=\""), "the script ran");

    // The failing attempt: open, built, its steps, call and failure there.
    let bad = attempt(&dom, 1);
    assert!(
        bad.contains(" open=\"\"") && bad.contains("data-built=\"1\""),
        "{bad}"
    );
    assert!(bad.contains("st-failed"), "{bad}");
    for text in [
        "make the tests pass",
        "step 1",
        "Running the tests.",
        "echo 'test add ... FAILED'; exit 1",
        "exit 1",
        "test add ... FAILED",
        "I think it is fine.",
        "outcome: done",
    ] {
        assert!(bad.contains(&html_text(text)), "{text} not in\n{bad}");
    }
    // The failed call is highlighted; the failure (the check) is marked,
    // open and has the anchor the "What went wrong" section links to.
    assert!(bad.contains("<details class=\"tool problem\">"), "{bad}");
    let failure = &bad[bad.find("id=\"f1\"").expect("failure anchor")..];
    let failure_tag = &bad[..bad.find("id=\"f1\"").unwrap()];
    let tag_start = failure_tag.rfind('<').unwrap();
    assert!(
        bad[tag_start..]
            .starts_with("<details class=\"check problem failure\" id=\"f1\" open=\"\""),
        "{}",
        &bad[tag_start..tag_start + 200]
    );
    assert!(
        failure.contains("assertion failed: add(2,2) == 4"),
        "{failure}"
    );
    assert!(dom.contains("<a href=\"#f1\">where it failed</a>"));

    // The passing attempt: collapsed, built only when opened.
    let good = attempt(&dom, 0);
    assert!(
        !good.contains(" open=") && !good.contains("data-built"),
        "{good}"
    );
    assert!(!good.contains("Writing."), "{good}");
    let dom = dump_dom(&browser, &file_url(&report, "#a0"));
    let good = attempt(&dom, 0);
    assert!(
        good.contains(" open=\"\"") && good.contains("data-built=\"1\""),
        "{good}"
    );
    for text in [
        "write hello",
        "Writing.",
        "printf hello > out.txt",
        "exit 0",
        "Done: hello.",
    ] {
        assert!(good.contains(&html_text(text)), "{text} not in\n{good}");
    }
    assert!(!good.contains("problem"), "{good}");
}

/// `text` as the serialised DOM writes it in text content.
pub(crate) fn html_text(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

#[test]
fn an_exported_session_renders_the_same_transcript() {
    let Some(browser) = chromium("an_exported_session_renders_the_same_transcript") else {
        return;
    };
    let env = Env::new();
    let script = env.write(
        "s.toml",
        "[[turns]]\ntext = \"Listing.\"\n[[turns.tool_calls]]\nname = \"shell\"\n\
         arguments = { command = \"echo one; echo two\" }\n[[turns]]\ntext = \"Two lines.\"\n",
    );
    let out = env
        .cmd()
        .arg("run")
        .arg("--script")
        .arg(&script)
        .arg("count the lines")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    let sessions = env.dir.path().join("home/sessions");
    let id = std::fs::read_dir(&sessions)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .find_map(|n| n.strip_suffix(".jsonl").map(str::to_string))
        .expect("a saved session");
    let page = env.dir.path().join("session.html");
    let out = env
        .cmd()
        .args(["sessions", "export", &id[..8], "--format", "html", "-o"])
        .arg(&page)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    let dom = dump_dom(&browser, &file_url(&page, ""));
    let transcript = attempt(&dom, 0);
    assert!(transcript.contains("data-built=\"1\""), "{transcript}");
    for text in [
        "count the lines",
        "Listing.",
        "echo one; echo two",
        "exit 0",
        "one\ntwo",
        "Two lines.",
    ] {
        assert!(transcript.contains(text), "{text} not in\n{transcript}");
    }
    assert!(dom.contains(&format!("cogni session {id}")), "{dom}");
}

#[test]
fn a_report_of_a_thousand_attempts_renders() {
    let Some(browser) = chromium("a_report_of_a_thousand_attempts_renders") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let results = large_run(1000);
    cogni::runner::report::write_all(dir.path(), &results).unwrap();
    if let Some(keep) = std::env::var_os("KEEP_REPORT") {
        std::fs::copy(dir.path().join("report.html"), keep).unwrap();
    }
    let html = std::fs::read_to_string(dir.path().join("report.html")).unwrap();
    let dom = dump_dom(&browser, &file_url(&dir.path().join("report.html"), ""));
    assert_eq!(dom.matches("<details id=\"a").count(), 1000);
    // Only the failing tenth is built on load.
    assert_eq!(dom.matches("data-built=\"1\"").count(), 100);
    // How long it took is a benchmark's business (docs/performance.md).
    assert!(dom.contains("data-render-ms=\""));
    assert!(html.len() < 4 << 20, "{} bytes", html.len());
}

/// A run of `n` attempts of three steps each (two shell calls with some
/// output, an answer); every tenth failed its check.
pub(crate) fn large_run(n: usize) -> cogni::runner::RunResults {
    use cogni::runner::results::*;
    use cogni::transcript::{Builder, Entry};
    let output: String = (0..40).map(|i| format!("output line {i}\n")).collect();
    let tasks: Vec<TaskResult> = (0..n)
        .map(|i| {
            let mut a = AttemptResult::new(1);
            let mut b = Builder::default();
            b.user(&format!("task number {i}: make the tests pass"));
            for step in 1..=3u32 {
                b.push(Entry::Step {
                    n: step,
                    tokens: 1200,
                    ms: 200,
                    dur: "200 ms".into(),
                });
                b.push(Entry::Assistant {
                    text: format!("Step {step}: running the tests."),
                });
                if step < 3 {
                    b.push(Entry::Tool {
                        id: format!("call_{step}"),
                        name: "shell".into(),
                        args: "{\"command\":\"cargo test\"}".into(),
                        out: Some(output.clone()),
                        code: Some(0),
                        err: false,
                        dur: "1.2 s".into(),
                    });
                }
            }
            let failed = i % 10 == 9;
            b.push(Entry::Check {
                what: "command `cargo test`".into(),
                passed: !failed,
                out: "test result: ok".into(),
                dur: "1.1 s".into(),
            });
            if failed {
                a.status = Status::Failed;
                a.failure_reason = Some(FailureReason::CheckFailed);
                a.error = Some("1 of 1 checks failed: command `cargo test`".into());
            }
            a.transcript = Some(b.finish(failed));
            a.steps = 3;
            a.wall_ms = 650;
            TaskResult {
                id: format!("task-{i}"),
                agent: "default".into(),
                tags: vec![],
                workspace: "copy".into(),
                status: a.status,
                attempts: vec![a],
            }
        })
        .collect();
    RunResults {
        schema_version: SCHEMA_VERSION,
        run_id: "20260101T000000Z-0000".into(),
        summary: Summary::of(&tasks, Duration::from_secs(60)),
        tasks,
        ..RunResults::default()
    }
}
