//! The REPL's notifications on a pseudo-terminal: the terminal reports
//! its focus while a turn runs (`ESC [ O` sent through the terminal is the
//! focus going away), and a turn that ends or a question that waits while
//! it is away is notified (OSC 9, OSC 777 or the bell); Notification hooks
//! hear the question and the idle prompt.

use crate::cli::Env;
use crate::common::mock::{chat, Gate, MockResponse, MockServer, Pause};
use crate::common::pty::Pty;
use crate::repl::{cogni, repl, WAIT};
use std::path::Path;
use std::time::{Duration, Instant};

const FOCUS_ON: &str = "\x1b[?1004h";
const FOCUS_OFF: &str = "\x1b[?1004l";
const FOCUS_OUT: &str = "\x1b[O";
const FOCUS_IN: &str = "\x1b[I";

/// An environment whose user config is `config`.
fn env_with(config: &str) -> Env {
    let env = Env::new();
    std::fs::write(env.dir.path().join("home/config.toml"), config).unwrap();
    env
}

/// `answer`, held back until `gate` opens, so the test can act while the
/// turn runs.
fn held(answer: MockResponse, gate: &Gate) -> MockResponse {
    answer.pause_before_headers(Pause::Until(gate.clone()))
}

/// Wait until the server has had `n` requests (the turn is running).
fn requested(server: &MockServer, n: usize) {
    let deadline = Instant::now() + WAIT;
    while server.request_count() < n {
        assert!(Instant::now() < deadline, "no request {n}");
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Leave the terminal while the held turn runs, then let it end.
fn leave_then_release(pty: &mut Pty, server: &MockServer, n: usize, gate: &Gate) {
    requested(server, n);
    pty.send(FOCUS_OUT);
    // The watch of the keyboard reads it (it looks every 50 ms).
    std::thread::sleep(Duration::from_millis(300));
    gate.release();
}

/// One turn of `pty` that ends while the terminal is away: its answer.
fn turn_away(pty: &mut Pty, server: &MockServer, n: usize, answer: &str) {
    let gate = Gate::new();
    server.enqueue(held(chat::text_response(answer), &gate));
    pty.send(&format!("question {n}\r"));
    leave_then_release(pty, server, n, &gate);
    pty.expect(answer, WAIT);
    pty.expect("› ", WAIT);
}

fn count(raw: &str, needle: &str) -> usize {
    raw.matches(needle).count()
}

#[test]
fn a_turn_that_ends_while_the_terminal_is_away_is_notified_and_a_focused_one_is_not() {
    let env = env_with("[repl]\nnotify = \"osc9\"\nnotify_min_secs = 0\n");
    let server = MockServer::start();
    let mut pty = repl(&env, &server, &[]);
    let before = pty.modes();
    pty.expect("› ", WAIT);
    turn_away(&mut pty, &server, 1, "first answer");
    let raw = pty.raw();
    assert!(
        !raw.contains("interrupted"),
        "a focus report is not an Esc: {raw:?}"
    );
    assert_eq!(count(&raw, "\x1b]9;cogni: turn finished ("), 1, "{raw:?}");
    let osc = raw.find("\x1b]9;cogni: turn finished (").unwrap();
    assert!(
        raw[osc..].find('\x07').unwrap() < 60,
        "one short sequence: {raw:?}"
    );
    // Focus reports are asked for while the turn runs, and only then.
    let on = raw.find(FOCUS_ON).expect("focus reporting turned on");
    let off = raw.rfind(FOCUS_OFF).expect("and off again");
    assert!(on < off && raw.rfind(FOCUS_ON).unwrap() < off, "{raw:?}");

    // The next turn starts focused (the user typed it) and ends quietly.
    server.enqueue(chat::text_response("second answer"));
    pty.send("and again\r");
    pty.expect("second answer", WAIT);
    pty.expect("› ", WAIT);
    // A report that comes at the prompt is a key the line editor ignores.
    pty.send(FOCUS_OUT);
    pty.send(FOCUS_IN);
    pty.send("\x04");
    assert_eq!(pty.wait(WAIT).code(), Some(0), "{}", pty.screen());
    let raw = pty.raw();
    assert_eq!(count(&raw, "\x1b]9;"), 1, "{raw:?}");
    assert!(raw.rfind(FOCUS_OFF) > raw.rfind(FOCUS_ON), "{raw:?}");
    assert_eq!(pty.modes(), before, "terminal modes restored");
}

#[test]
fn the_bell_and_osc_777_notify_too_and_short_turns_do_not() {
    for (config, sent) in [
        ("notify = \"bell\"\nnotify_min_secs = 0", "\x07"),
        (
            "notify = \"osc777\"\nnotify_min_secs = 0",
            "\x1b]777;notify;cogni;turn finished (",
        ),
    ] {
        let env = env_with(&format!("[repl]\n{config}\n"));
        let server = MockServer::start();
        let mut pty = repl(&env, &server, &[]);
        pty.expect("› ", WAIT);
        let quiet = count(&pty.raw(), sent);
        turn_away(&mut pty, &server, 1, "the answer");
        assert_eq!(count(&pty.raw(), sent), quiet + 1, "{config}");
        pty.send("\x04");
        assert_eq!(pty.wait(WAIT).code(), Some(0));
    }
    // The default minimum: a turn of a second is too short to notify.
    let env = env_with("[repl]\nnotify = \"osc9\"\n");
    let server = MockServer::start();
    let mut pty = repl(&env, &server, &[]);
    pty.expect("› ", WAIT);
    turn_away(&mut pty, &server, 1, "quick answer");
    assert!(!pty.raw().contains("\x1b]9;"), "{:?}", pty.raw());
    pty.send("\x04");
    assert_eq!(pty.wait(WAIT).code(), Some(0));
}

#[test]
fn nothing_is_notified_when_off_or_in_ci_and_focus_is_not_even_asked_for() {
    for (config, ci) in [("notify = \"off\"", false), ("notify = \"osc9\"", true)] {
        let env = env_with(&format!("[repl]\n{config}\nnotify_min_secs = 0\n"));
        let server = MockServer::start();
        let mut cmd = cogni(&env, Some(&server), &["repl"]);
        if ci {
            cmd.env("CI", "true");
        }
        let mut pty = Pty::spawn(cmd, 100);
        pty.expect("› ", WAIT);
        turn_away(&mut pty, &server, 1, "the answer");
        pty.send("\x04");
        assert_eq!(pty.wait(WAIT).code(), Some(0));
        let raw = pty.raw();
        assert!(!raw.contains("\x1b]9;"), "{config}: {raw:?}");
        assert!(!raw.contains(FOCUS_ON), "{config}: {raw:?}");
    }
}

fn read_json(path: &Path) -> serde_json::Value {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{e}: {text}"))
}

/// Wait until `path` exists.
pub(crate) fn wait_for_file(path: &Path) {
    let deadline = Instant::now() + WAIT;
    while !path.exists() {
        assert!(
            Instant::now() < deadline,
            "{} never appeared",
            path.display()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn a_question_waiting_while_away_is_notified_and_hooks_hear_it_and_the_idle_prompt() {
    let env = Env::new();
    let log = env.dir.path().join("log");
    std::fs::create_dir_all(&log).unwrap();
    std::fs::write(
        env.dir.path().join("home/config.toml"),
        format!(
            "[repl]\nnotify = \"osc9\"\nnotify_idle_secs = 1\n\
             [[hooks.Notification]]\nmatcher = \"permission_prompt\"\ncommand = \"cat > '{0}/asked.json'\"\n\
             [[hooks.Notification]]\nmatcher = \"idle_prompt\"\ncommand = \"cat > '{0}/idle.json'\"\n",
            log.display()
        ),
    )
    .unwrap();
    let server = MockServer::start();
    let gate = Gate::new();
    server.enqueue(held(
        chat::tool_calls_response(&[("call_1", "shell", r#"{"command":"touch made.txt"}"#)]),
        &gate,
    ));
    server.enqueue(chat::text_response("made it"));
    let mut pty = repl(&env, &server, &["--mode", "act", "--approval", "untrusted"]);
    pty.expect("act › ", WAIT);
    pty.send("make the file\r");
    leave_then_release(&mut pty, &server, 1, &gate);
    pty.expect("Allow shell: touch made.txt", WAIT);
    pty.expect("tell the model why >", WAIT);
    assert!(
        pty.raw()
            .contains("\x1b]9;cogni: approval needed: shell `touch made.txt`\x07"),
        "{:?}",
        pty.raw()
    );
    // Coming back is a focus report, not an answer: the question waits.
    pty.send(FOCUS_IN);
    std::thread::sleep(Duration::from_millis(300));
    assert!(
        !pty.screen().contains("no (") && !made(&env),
        "{}",
        pty.screen()
    );
    pty.send("y");
    pty.expect("made it", WAIT);
    pty.expect("› ", WAIT);
    assert!(made(&env));
    let asked = read_json(&log.join("asked.json"));
    let session = std::fs::read_dir(env.dir.path().join("home/sessions"))
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    assert_eq!(asked["hook_event_name"], "Notification", "{asked}");
    assert_eq!(asked["notification_type"], "permission_prompt", "{asked}");
    assert_eq!(
        asked["message"], "cogni needs your permission to use shell",
        "{asked}"
    );
    assert_eq!(
        asked["transcript_path"],
        session.to_str().unwrap(),
        "{asked}"
    );
    assert_eq!(
        asked["session_id"],
        session.file_stem().unwrap().to_str().unwrap()
    );
    assert_eq!(
        Path::new(asked["cwd"].as_str().unwrap()),
        env.work().canonicalize().unwrap()
    );
    // A second after the turn, at the prompt: the idle notice.
    wait_for_file(&log.join("idle.json"));
    let idle = read_json(&log.join("idle.json"));
    assert_eq!(idle["notification_type"], "idle_prompt", "{idle}");
    assert_eq!(idle["message"], "cogni is waiting for your input", "{idle}");
    pty.send("\x04");
    assert_eq!(pty.wait(WAIT).code(), Some(0));
}

fn made(env: &Env) -> bool {
    env.work().join("made.txt").exists()
}
