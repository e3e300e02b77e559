//! Transcripts through the binary: transcripts.jsonl beside results.json
//! (entries, the failure, secrets redacted), report.html's blocks, and
//! `cogni sessions export` in its three formats (the browser renders them
//! in browser.rs).

use crate::cli::{stderr_of, stdout_of, Env};
use crate::runner::{assert_code, Tasks, OFFLINE_AGENT};
use serde_json::Value;

const SECRET: &str = "sk-abcdefghijklmnopqrstuvwxyz0123";

#[test]
fn each_attempt_has_a_redacted_transcript_with_its_failure() {
    let t = Tasks::new();
    t.script(
        "leaky",
        &format!(
            "[[turns]]\ntext = \"Checking the key.\"\n[[turns.tool_calls]]\nname = \"shell\"\n\
             arguments = {{ command = \"echo KEY={SECRET}; exit 3\" }}\n[[turns]]\ntext = \"Done.\"\n"
        ),
    );
    t.file(&format!(
        r#"{OFFLINE_AGENT}
[[tasks]]
id = "leaky"
prompt = "print the key"
script = "scripts/leaky.toml"
checks = [{{ answer_equals = "nope" }}]
"#
    ));
    let out = t.run(&[]);
    assert_code(&out, 1);
    let text = std::fs::read_to_string(t.out().join("transcripts.jsonl")).unwrap();
    assert!(!text.contains(SECRET), "a key in the transcripts:\n{text}");
    let lines: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 1);
    assert_eq!(
        (&lines[0]["task"], &lines[0]["agent"], &lines[0]["attempt"]),
        (
            &Value::from("leaky"),
            &Value::from("offline"),
            &Value::from(1)
        )
    );
    let entries = lines[0]["transcript"]["entries"].as_array().unwrap();
    let kinds: Vec<&str> = entries.iter().map(|e| e["k"].as_str().unwrap()).collect();
    assert_eq!(
        kinds,
        [
            "user",
            "step",
            "assistant",
            "tool",
            "step",
            "assistant",
            "outcome",
            "check"
        ],
        "{text}"
    );
    let tool = &entries[3];
    assert_eq!(tool["name"], "shell");
    assert_eq!(tool["code"], 3);
    assert_eq!(tool["err"], true);
    assert!(
        tool["out"].as_str().unwrap().contains("KEY=[REDACTED]"),
        "{tool}"
    );
    assert!(
        tool["args"].as_str().unwrap().contains("[REDACTED]"),
        "{tool}"
    );
    // The failure is the failed check, not the failed call.
    assert_eq!(lines[0]["transcript"]["failure"], 7);
    assert_eq!(entries[7]["passed"], false);

    let html = std::fs::read_to_string(t.out().join("report.html")).unwrap();
    assert!(!html.contains(SECRET));
    assert!(
        html.contains("<details id=\"a0\" class=\"attempt st-failed\" data-t=\"0\" open>"),
        "{html}"
    );
    assert!(html.contains("<a href=\"#f0\">where it failed</a>"));
    assert!(html.contains("<script type=\"application/json\" id=\"t0\">{\"entries\":["));
}

/// A saved session of a scripted run in `env`; its id.
fn saved_session(env: &Env) -> String {
    let script = env.write(
        "s.toml",
        "[[turns]]\ntext = \"Listing.\"\n[[turns.tool_calls]]\nname = \"shell\"\n\
         arguments = { command = \"echo '```'; echo two; exit 2\" }\n[[turns]]\ntext = \"It failed with 2.\"\n",
    );
    let out = env
        .cmd()
        .arg("run")
        .arg("--script")
        .arg(&script)
        .arg("list things")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    let sessions = env.dir.path().join("home/sessions");
    std::fs::read_dir(sessions)
        .unwrap()
        .flatten()
        .find_map(|e| {
            e.file_name()
                .to_string_lossy()
                .strip_suffix(".jsonl")
                .map(str::to_string)
        })
        .expect("a saved session")
}

#[test]
fn a_session_exports_as_markdown_json_and_html() {
    let env = Env::new();
    let id = saved_session(&env);
    let export = |format: &str| {
        let out = env
            .cmd()
            .args(["sessions", "export", &id, "--format", format])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
        stdout_of(&out)
    };
    let md = export("md");
    assert!(md.starts_with(&format!("# cogni session {id}\n")), "{md}");
    assert!(md.contains("## Task\n\n```text\nlist things\n```"), "{md}");
    assert!(md.contains("Listing.\n\n**shell** ✗ (exit 2)"), "{md}");
    // Output holding a fence gets a longer one.
    assert!(md.contains("````text\nexit code 2"), "{md}");
    assert!(md.contains("It failed with 2."), "{md}");

    let json: Value = serde_json::from_str(&export("json")).unwrap();
    assert_eq!(json["session"]["id"], id.as_str());
    let entries = json["transcript"]["entries"].as_array().unwrap();
    let kinds: Vec<&str> = entries.iter().map(|e| e["k"].as_str().unwrap()).collect();
    assert_eq!(kinds, ["user", "assistant", "tool", "assistant"]);
    assert_eq!(entries[2]["code"], 2);

    let html = export("html");
    assert!(html.starts_with("<!DOCTYPE html>"));
    assert!(html.contains("<details id=\"a0\" class=\"attempt \" data-t=\"0\" open>"));
    assert!(html.contains("\"k\":\"tool\""));
    // The default is Markdown; a prefix of the id is enough.
    let out = env
        .cmd()
        .args(["sessions", "export", &id[..10]])
        .output()
        .unwrap();
    assert_eq!(stdout_of(&out), md);
    // -o writes a file.
    let file = env.dir.path().join("t.md");
    let out = env
        .cmd()
        .args(["sessions", "export", &id, "-o"])
        .arg(&file)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(std::fs::read_to_string(&file).unwrap(), md);
}

#[test]
fn exporting_an_unknown_session_or_format_is_refused() {
    let env = Env::new();
    let out = env
        .cmd()
        .args(["sessions", "export", "nope"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr_of(&out).contains("nope"), "{}", stderr_of(&out));
    let out = env
        .cmd()
        .args(["sessions", "export", "x", "--format", "pdf"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr_of(&out).contains("possible values: md, html, json"),
        "{}",
        stderr_of(&out)
    );
}
