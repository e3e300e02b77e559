//! Session files through the real binary: saved runs, resume after kill -9,
//! a session in use, damaged files, a full disk, `--no-persist`.

use crate::cli::Env;
use crate::common::mock::{chat, Gate, MockResponse, MockServer};
use crate::common::pty::processes_with;
use std::io::Write;
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

fn cogni(env: &Env, server: &MockServer, args: &[&str]) -> Command {
    let mut cmd = Command::new(assert_cmd::cargo::cargo_bin("cogni"));
    cmd.current_dir(env.work())
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", env.dir.path().join("home"))
        .env("COGNI_HOME", env.dir.path().join("home"))
        .env("OPENAI_BASE_URL", server.base_url())
        .env("OPENAI_API_KEY", "sk-test-key-for-the-mock-0123456789")
        .args(["run", "--model", "gpt-4.1", "--approval", "never"])
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    cmd
}

fn sessions_dir(env: &Env) -> PathBuf {
    env.dir.path().join("home/sessions")
}

fn session_files(env: &Env) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(sessions_dir(env))
        .map(|d| d.flatten().map(|e| e.path()).collect())
        .unwrap_or_default();
    files.sort();
    files
}

fn id_of(path: &std::path::Path) -> String {
    path.file_stem().unwrap().to_string_lossy().into_owned()
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// A finished run, saved: its id.
fn saved_run(env: &Env, server: &MockServer, task: &str, answer: &str) -> String {
    server.enqueue(chat::text_response(answer));
    let out = cogni(env, server, &[task]).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let files = session_files(env);
    id_of(files.last().unwrap())
}

#[test]
fn runs_are_saved_listed_and_resumed_with_their_history() {
    let env = Env::new();
    let server = MockServer::start();
    let id = saved_run(&env, &server, "remember the number 42", "I will.");
    let path = sessions_dir(&env).join(format!("{id}.jsonl"));
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(&path).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o600);
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(
        !text.contains("sk-test-key-for-the-mock"),
        "the key never reaches the file"
    );

    let list = Command::new(assert_cmd::cargo::cargo_bin("cogni"))
        .current_dir(env.work())
        .env_clear()
        .env("COGNI_HOME", env.dir.path().join("home"))
        .env("HOME", env.dir.path().join("home"))
        .arg("sessions")
        .output()
        .unwrap();
    let listing = String::from_utf8_lossy(&list.stdout);
    assert!(
        listing.contains(&id) && listing.contains("remember the number 42"),
        "{listing}"
    );
    assert!(listing.contains("15"), "tokens (10 in + 5 out): {listing}");

    server.enqueue(chat::text_response("It was 42."));
    let out = cogni(
        &env,
        &server,
        &["--resume", &id[..8], "what was the number?"],
    )
    .output()
    .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(String::from_utf8_lossy(&out.stdout), "It was 42.\n");
    let body = server.requests()[1].body_text();
    assert!(
        body.contains("remember the number 42") && body.contains("I will."),
        "{body}"
    );
    assert_eq!(session_files(&env).len(), 1, "resumed in place");
    server.assert_invariants();
}

#[test]
fn kill_9_mid_turn_then_resume() {
    let env = Env::new();
    let server = MockServer::start();
    // Turn 1 answers, turn 2 starts a long command and is killed.
    server.enqueue(chat::tool_calls_response(&[(
        "call_1",
        "shell",
        r#"{"command":"echo one > one.txt"}"#,
    )]));
    server.enqueue(chat::tool_calls_response(&[(
        "call_2",
        "shell",
        r#"{"command":"sleep 317"}"#,
    )]));
    let mut child = cogni(&env, &server, &["do the work"]).spawn().unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    while processes_with("sleep 317").is_empty() {
        assert!(Instant::now() < deadline, "the command never started");
        std::thread::sleep(Duration::from_millis(20));
    }
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();
    for pid in processes_with("sleep 317") {
        // SAFETY: signalling the orphaned command we started.
        unsafe { libc::kill(pid as i32, libc::SIGKILL) };
    }
    let id = id_of(&session_files(&env)[0]);

    server.enqueue(chat::text_response("resumed fine"));
    let out = cogni(&env, &server, &["--resume", &id, "go on"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(String::from_utf8_lossy(&out.stdout), "resumed fine\n");
    server.assert_invariants();
    let body = server.requests()[2].body_text();
    assert!(
        body.contains("do the work") && body.contains("echo one") && body.contains("go on"),
        "{body}"
    );
}

#[test]
fn a_session_in_use_is_refused_or_forked() {
    let env = Env::new();
    let server = MockServer::start();
    let id = saved_run(&env, &server, "first", "ok");
    let gate = Gate::new();
    server.enqueue(
        MockResponse::sse([chat::role(), chat::text("held")])
            .wait_for(&gate)
            .chunks([chat::finish("stop"), chat::usage(1, 1, 0), chat::done()]),
    );
    let holder = cogni(&env, &server, &["--resume", &id, "hold it"])
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    while server.request_count() < 2 {
        assert!(Instant::now() < deadline, "the first process never asked");
        std::thread::sleep(Duration::from_millis(20));
    }
    let out = cogni(&env, &server, &["--resume", &id, "me too"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("in use"), "{}", stderr(&out));
    assert!(stderr(&out).contains("--fork"), "{}", stderr(&out));

    server.enqueue(chat::text_response("forked"));
    let out = cogni(&env, &server, &["--resume", &id, "--fork", "me too"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(session_files(&env).len(), 2, "the fork is a new session");
    gate.release();
    let held = holder.wait_with_output().unwrap();
    assert_eq!(held.status.code(), Some(0), "{}", stderr(&held));
    server.assert_invariants();
}

#[test]
fn corrupted_lines_are_skipped_and_unanswered_calls_repaired() {
    let env = Env::new();
    let server = MockServer::start();
    let id = saved_run(&env, &server, "first", "ok");
    let path = sessions_dir(&env).join(format!("{id}.jsonl"));
    let mut file = std::fs::OpenOptions::new()
        .append(true)
        .open(&path)
        .unwrap();
    file.write_all(b"this line is garbage\n").unwrap();
    file.write_all(
        br#"{"type":"item","item":{"role":"assistant","content":{"type":"tool_call","id":"call_x","name":"shell","arguments":"{}"}}}"#,
    )
    .unwrap();
    file.write_all(b"\n{\"type\":\"item\",\"item\":{\"ro")
        .unwrap();
    drop(file);

    server.enqueue(chat::text_response("still fine"));
    let out = cogni(&env, &server, &["--resume", &id, "next"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(err.contains("not a valid record"), "{err}");
    assert!(err.contains("cut off"), "{err}");
    assert!(err.contains("interrupted"), "{err}");
    server.assert_invariants();
    assert!(server.requests()[1].body_text().contains("call_x"));
}

#[test]
fn garbage_and_empty_session_files_are_clear_errors() {
    let env = Env::new();
    let server = MockServer::start();
    std::fs::create_dir_all(sessions_dir(&env)).unwrap();
    std::fs::write(sessions_dir(&env).join("garbage.jsonl"), "hello\n").unwrap();
    std::fs::write(sessions_dir(&env).join("empty.jsonl"), "").unwrap();
    for (id, message) in [
        ("garbage", "not a cogni session file"),
        ("empty", "empty"),
        ("missing", "no saved session matches"),
    ] {
        let out = cogni(&env, &server, &["--resume", id, "x"])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{id}");
        assert!(stderr(&out).contains(message), "{id}: {}", stderr(&out));
    }
    assert_eq!(server.request_count(), 0);
}

#[test]
fn a_full_disk_is_a_loud_error_and_the_file_stays_intact() {
    let env = Env::new();
    let server = MockServer::start();
    let id = saved_run(&env, &server, "first", "ok");
    let path = sessions_dir(&env).join(format!("{id}.jsonl"));
    let before = std::fs::read_to_string(&path).unwrap();
    // The file may grow by a few bytes only: the next line cannot be written.
    let limit = before.len() as u64 + 20;
    server.enqueue(chat::text_response("answered anyway"));
    let mut cmd = cogni(&env, &server, &["--resume", &id, "a long enough question"]);
    // SAFETY: setrlimit and signal are async-signal-safe.
    unsafe {
        cmd.pre_exec(move || {
            libc::signal(libc::SIGXFSZ, libc::SIG_IGN);
            let lim = libc::rlimit {
                rlim_cur: limit,
                rlim_max: limit,
            };
            if libc::setrlimit(libc::RLIMIT_FSIZE, &lim) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let out = cmd.output().unwrap();
    let err = stderr(&out);
    assert!(
        err.contains("error: cannot write the session file"),
        "{err}"
    );
    assert!(err.contains("no longer saved"), "{err}");
    assert_eq!(String::from_utf8_lossy(&out.stdout), "answered anyway\n");
    let after = std::fs::read_to_string(&path).unwrap();
    assert_eq!(after, before, "no half-written line");
}

#[test]
fn an_unwritable_sessions_directory_fails_before_any_request_and_no_persist_saves_nothing() {
    let env = Env::new();
    let server = MockServer::start();
    std::fs::write(sessions_dir(&env), "a file where the directory should be").unwrap();
    let out = cogni(&env, &server, &["task"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("--no-persist"), "{}", stderr(&out));
    assert_eq!(server.request_count(), 0);

    std::fs::remove_file(sessions_dir(&env)).unwrap();
    server.enqueue(chat::text_response("done"));
    let out = cogni(&env, &server, &["--no-persist", "task"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(session_files(&env).is_empty());
}

/// One fake secret of every shape the redactor knows.
const SECRETS: &[&str] = &[
    "ghp_abcdefghijklmnopqrstuvwxyz0123456789",
    "github_pat_11ABCDEFG0123456789_abcdefghijklmnop",
    "AKIAIOSFODNN7EXAMPLE",
    "ASIAIOSFODNN7EXAMPLE",
    "sk-abcdefghijklmnop1234",
    "sk-ant-api03-abcdefghijklmnopqrstuv",
    "AIzaSyA1234567890abcdefghijklmnopqrstuv",
];

#[test]
fn secrets_at_the_start_of_a_line_stay_out_of_session_files_and_the_output_file() {
    let env = Env::new();
    // The tool prints every secret on its own line, one after a tab, and
    // the last at the very end of its output; the final answer does the
    // same, and the task itself holds one on a line of its own.
    let lines: Vec<String> = SECRETS
        .iter()
        .enumerate()
        .map(|(i, s)| {
            if i == 1 {
                format!("\\t{s}")
            } else {
                s.to_string()
            }
        })
        .collect();
    let command = format!("printf '{}'", lines.join("\\n"));
    let answer = SECRETS.join("\n");
    let script = format!(
        "[[turns]]\n[[turns.tool_calls]]\nname = \"shell\"\narguments = {{ command = {} }}\n[[turns]]\nexpect = \"exit code 0\"\ntext = {}\n",
        toml_string(&command),
        toml_string(&format!("found:\n{answer}\n\tand {}", SECRETS[0]))
    );
    let out_file = env.dir.path().join("answer.txt");
    let out = env
        .run_script(&script, &format!("check\n{}", SECRETS[2]))
        .arg("-o")
        .arg(&out_file)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let files = session_files(&env);
    assert_eq!(files.len(), 1);
    let saved = std::fs::read_to_string(&files[0]).unwrap();
    let written = std::fs::read_to_string(&out_file).unwrap();
    for secret in SECRETS {
        assert!(
            !saved.contains(secret),
            "{secret} in the session file:\n{saved}"
        );
        assert!(!written.contains(secret), "{secret} in -o:\n{written}");
    }
    // What is around the secrets is kept, and the file still parses.
    for line in saved.lines() {
        serde_json::from_str::<serde_json::Value>(line).unwrap();
    }
    assert!(saved.contains("\\n[REDACTED]\\n"), "{saved}");
    assert!(saved.contains("\\t[REDACTED]"), "{saved}");
    assert!(
        written.starts_with("found:\n[REDACTED]\n[REDACTED]\n"),
        "{written}"
    );
}

/// `text` as a TOML basic string.
fn toml_string(text: &str) -> String {
    // JSON string escapes are valid TOML basic-string escapes.
    serde_json::to_string(text).unwrap()
}
