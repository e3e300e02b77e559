//! A large `--jobs` spreads the attempts over several threads (one per 8
//! attempts at once, at most one per core): every attempt still runs once,
//! results keep their order, and an interrupt stops the attempts of every
//! thread.

use crate::runner::{assert_code, Tasks, OFFLINE_AGENT};
use serde_json::Value;
use std::time::{Duration, Instant};

#[test]
fn many_attempts_at_once_all_run_and_keep_their_order() {
    let t = Tasks::new();
    t.script(
        "write",
        "[[turns]]\n[[turns.tool_calls]]\nname = \"shell\"\narguments = { command = \"printf ok > out.txt\" }\n\
         [[turns]]\ntext = \"ok\"\n",
    );
    let mut file = OFFLINE_AGENT.to_string();
    for i in 0..40 {
        file.push_str(&format!(
            "\n[[tasks]]\nid = \"t{i:02}\"\nprompt = \"x\"\nscript = \"scripts/write.toml\"\nrepeat = 2\n\
             checks = [{{ command = \"test \\\"$(cat out.txt)\\\" = ok\" }}]\n"
        ));
    }
    t.file(&file);
    let out = t.run(&["--jobs", "24"]);
    assert_code(&out, 0);
    let results = t.results();
    assert_eq!(results["summary"]["passed"], 80);
    let ids: Vec<&str> = results["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["id"].as_str().unwrap())
        .collect();
    let expected: Vec<String> = (0..40).map(|i| format!("t{i:02}")).collect();
    assert_eq!(ids, expected);
    for task in results["tasks"].as_array().unwrap() {
        let numbers: Vec<&Value> = task["attempts"]
            .as_array()
            .unwrap()
            .iter()
            .map(|a| &a["attempt"])
            .collect();
        assert_eq!(numbers, [&Value::from(1), &Value::from(2)]);
    }
    let transcripts = std::fs::read_to_string(t.out().join("transcripts.jsonl")).unwrap();
    assert_eq!(transcripts.lines().count(), 80);
}

#[test]
fn an_interrupt_stops_the_attempts_of_every_thread() {
    let t = Tasks::new();
    let pids = t.env.dir.path().join("pids");
    std::fs::create_dir_all(&pids).unwrap();
    t.script(
        "sleep",
        &format!(
            "[[turns]]\n[[turns.tool_calls]]\nname = \"shell\"\narguments = {{ command = \"echo $$ > {}/$RANDOM$$; exec sleep 30.4343\" }}\n",
            pids.display()
        ),
    );
    let mut file = format!("{OFFLINE_AGENT}sandbox = \"danger-full-access\"\n");
    for i in 0..30 {
        file.push_str(&format!(
            "\n[[tasks]]\nid = \"s{i:02}\"\nprompt = \"x\"\nscript = \"scripts/sleep.toml\"\n"
        ));
    }
    t.file(&file);
    let mut child = std::process::Command::new(assert_cmd::cargo::cargo_bin("cogni"))
        .current_dir(t.env.work())
        .env("COGNI_HOME", t.env.dir.path().join("home"))
        .arg("run")
        .arg("--tasks")
        .arg(t.env.dir.path().join("tasks.toml"))
        .args(["--jobs", "24", "--output-dir"])
        .arg(t.out())
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    while crate::common::entries(&pids).len() < 24 {
        assert!(Instant::now() < deadline, "not all 24 attempts started");
        std::thread::sleep(Duration::from_millis(20));
    }
    let signalled = Instant::now();
    // SAFETY: signalling our own child.
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(143));
    assert!(signalled.elapsed() < Duration::from_secs(20));
    let results = t.results();
    let statuses: Vec<(&str, &str)> = results["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| {
            let a = &t["attempts"][0];
            (
                a["status"].as_str().unwrap(),
                a["failure_reason"].as_str().unwrap_or(""),
            )
        })
        .collect();
    let interrupted = statuses
        .iter()
        .filter(|s| **s == ("error", "interrupted"))
        .count();
    let skipped = statuses.iter().filter(|s| s.0 == "skipped").count();
    assert_eq!((interrupted, skipped), (24, 6), "{statuses:?}");
    let deadline = Instant::now() + Duration::from_secs(10);
    while !crate::common::pids_running("sleep\x0030.4343").is_empty() {
        assert!(Instant::now() < deadline, "a command outlived the run");
        std::thread::sleep(Duration::from_millis(20));
    }
}
