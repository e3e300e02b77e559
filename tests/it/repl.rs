//! The REPL as a person uses it: the real binary on a pseudo-terminal,
//! against the loopback mock provider (or the scripted one).

use crate::cli::Env;
use crate::common::mock::{chat, tool_names, MockResponse, MockServer};
use crate::common::pty::{processes_with, Pty};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

pub(crate) const WAIT: Duration = Duration::from_secs(20);

/// `cogni <args>` in the workspace, against `server` as the OpenAI provider.
pub(crate) fn cogni(env: &Env, server: Option<&MockServer>, args: &[&str]) -> Command {
    let mut cmd = Command::new(assert_cmd::cargo::cargo_bin("cogni"));
    cmd.current_dir(env.work())
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", env.dir.path().join("home"))
        .env("COGNI_HOME", env.dir.path().join("home"))
        .env("TERM", "xterm-256color")
        .args(args);
    if let Some(server) = server {
        cmd.env("OPENAI_BASE_URL", server.base_url())
            .env("OPENAI_API_KEY", "sk-test-key-for-the-mock")
            .args(["--model", "gpt-4.1"]);
    }
    cmd
}

pub(crate) fn repl(env: &Env, server: &MockServer, args: &[&str]) -> Pty {
    let mut all = vec!["repl"];
    all.extend_from_slice(args);
    Pty::spawn(cogni(env, Some(server), &all), 100)
}

#[test]
fn a_streamed_answer_appears_and_ctrl_d_leaves_with_the_terminal_restored() {
    let env = Env::new();
    let server = MockServer::start();
    server.enqueue(chat::text_response(
        "# Title\nHello **world**, from the mock.\n",
    ));
    let mut pty = repl(&env, &server, &[]);
    let before = pty.modes();
    pty.expect("› ", WAIT);
    // A trailing backslash continues the message on the next line.
    pty.send("say \\\r");
    pty.send("hello\r");
    pty.expect("Title", WAIT);
    pty.expect("Hello world, from the mock.", WAIT);
    assert!(
        pty.raw().contains("\x1b[1mworld\x1b[0m"),
        "bold is rendered, not shown as markup: {:?}",
        pty.raw()
    );
    pty.expect("tokens:", WAIT);
    pty.expect("› ", WAIT);
    pty.send("\x04");
    assert_eq!(pty.wait(WAIT).code(), Some(0), "{}", pty.screen());
    assert_eq!(pty.modes(), before, "terminal modes restored");
    // Leaving says how to come back.
    let sessions: Vec<_> = std::fs::read_dir(env.dir.path().join("home/sessions"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    let id = sessions[0].trim_end_matches(".jsonl");
    // Waited for: the child may exit before its last bytes are read.
    pty.expect(&format!("resume this session: cogni resume {id}"), WAIT);
    server.assert_invariants();
    let body = server.requests()[0].body_text();
    assert!(body.contains(r"say \nhello"), "{body}");
    let history = env.dir.path().join("home/history");
    assert!(std::fs::read_to_string(&history).unwrap().contains("hello"));
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(&history).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o600, "typed input may hold secrets");
}

#[test]
fn ctrl_c_during_a_slow_stream_returns_to_the_prompt_and_the_next_question_works() {
    let env = Env::new();
    let server = MockServer::start();
    server.enqueue(
        MockResponse::sse([
            chat::role(),
            chat::text("first line of a long answer\nand a second "),
        ])
        .stall_forever(),
    );
    server.enqueue(chat::text_response("second answer"));
    let mut pty = repl(&env, &server, &[]);
    pty.expect("› ", WAIT);
    pty.send("tell me a long story\r");
    pty.expect("first line of a long answer", WAIT);
    let pressed = Instant::now();
    pty.send("\x03");
    pty.expect("and a second", WAIT);
    pty.expect("interrupted", WAIT);
    pty.expect("› ", WAIT);
    assert!(
        pressed.elapsed() < Duration::from_secs(5),
        "the stop took {:?}",
        pressed.elapsed()
    );
    pty.send("and now?\r");
    pty.expect("second answer", WAIT);
    pty.expect("› ", WAIT);
    pty.send("/exit\r");
    assert_eq!(pty.wait(WAIT).code(), Some(0));
    server.assert_invariants();
    let second = server.requests()[1].body_text();
    assert!(
        second.contains("tell me a long story") && second.contains("and now?"),
        "{second}"
    );
}

#[test]
fn esc_during_a_turn_stops_it_arrows_do_not_and_typing_waits_for_the_next_prompt() {
    let env = Env::new();
    let server = MockServer::start();
    server.enqueue(
        MockResponse::sse([chat::role(), chat::text("a long answer begins\n")]).stall_forever(),
    );
    server.enqueue(chat::text_response("second answer"));
    let mut pty = repl(&env, &server, &[]);
    pty.expect("› ", WAIT);
    pty.send("tell me a long story\r");
    pty.expect("a long answer begins", WAIT);
    // An arrow key is a sequence that starts with Esc: not a stop.
    pty.send("\x1b[A");
    std::thread::sleep(Duration::from_millis(300));
    assert!(!pty.screen().contains("interrupted"), "{}", pty.screen());
    // Typed while the answer streams: not echoed into it, kept.
    pty.send("and now?");
    std::thread::sleep(Duration::from_millis(300));
    assert!(!pty.screen().contains("and now?"), "{}", pty.screen());
    let pressed = Instant::now();
    pty.send("\x1b");
    pty.expect("interrupted", WAIT);
    assert!(
        pressed.elapsed() < Duration::from_secs(5),
        "the stop took {:?}",
        pressed.elapsed()
    );
    // The prompt comes back with what was typed on it.
    pty.expect("› and now?", WAIT);
    pty.send("\r");
    pty.expect("second answer", WAIT);
    pty.expect("› ", WAIT);
    pty.send("/exit\r");
    assert_eq!(pty.wait(WAIT).code(), Some(0), "{}", pty.screen());
    let second = server.requests()[1].body_text();
    assert!(second.contains("and now?"), "{second}");
}

#[test]
fn ctrl_c_during_a_sleep_tool_leaves_no_process_behind() {
    let env = Env::new();
    let server = MockServer::start();
    server.enqueue(chat::tool_calls_response(&[(
        "call_1",
        "shell",
        r#"{"command":"sleep 313"}"#,
    )]));
    server.enqueue(chat::text_response("stopped as asked"));
    let mut pty = repl(&env, &server, &["--mode", "auto"]);
    pty.expect("auto › ", WAIT);
    pty.send("wait a while\r");
    pty.expect("sleep 313", WAIT);
    let deadline = Instant::now() + WAIT;
    while processes_with("sleep 313").is_empty() {
        assert!(Instant::now() < deadline, "the command never started");
        std::thread::sleep(Duration::from_millis(20));
    }
    pty.send("\x03");
    pty.expect("interrupted", WAIT);
    pty.expect("› ", WAIT);
    let deadline = Instant::now() + Duration::from_secs(5);
    while !processes_with("sleep 313").is_empty() {
        assert!(
            Instant::now() < deadline,
            "the command outlived the stop: {:?}",
            processes_with("sleep 313")
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    pty.send("what happened?\r");
    pty.expect("stopped as asked", WAIT);
    pty.send("/quit\r");
    assert_eq!(pty.wait(WAIT).code(), Some(0));
    // The second request carries the call with its "interrupted" output.
    server.assert_invariants();
    let second = server.requests()[1].body_text();
    assert!(second.contains("Interrupted by the user"), "{second}");
}

#[test]
fn sigterm_stops_the_turn_and_leaves_with_the_session_saved_and_sighup_leaves_the_prompt() {
    let env = Env::new();
    let server = MockServer::start();
    server.enqueue(
        MockResponse::sse([chat::role(), chat::text("thinking about it\n")]).stall_forever(),
    );
    let mut pty = repl(&env, &server, &[]);
    let before = pty.modes();
    pty.expect("› ", WAIT);
    pty.send("a question that never gets its answer\r");
    pty.expect("thinking about it", WAIT);
    pty.signal(libc::SIGTERM);
    pty.expect("SIGTERM", WAIT);
    assert_eq!(pty.wait(WAIT).code(), Some(143), "{}", pty.screen());
    assert_eq!(pty.modes(), before, "terminal modes restored");
    let sessions = env.dir.path().join("home/sessions");
    let files: Vec<_> = std::fs::read_dir(&sessions).unwrap().flatten().collect();
    assert_eq!(files.len(), 1);
    let saved = std::fs::read_to_string(files[0].path()).unwrap();
    assert!(
        saved.contains("a question that never gets its answer"),
        "{saved}"
    );
    assert!(saved.contains("\"type\":\"usage\""), "{saved}");

    // SIGHUP at the prompt (the terminal went away) leaves too.
    let mut pty = repl(&env, &server, &[]);
    pty.expect("› ", WAIT);
    pty.signal(libc::SIGHUP);
    assert_eq!(pty.wait(WAIT).code(), Some(129), "{}", pty.screen());
}

#[test]
fn slash_commands_do_what_they_say() {
    let env = Env::new();
    let commands = env.dir.path().join("home/commands");
    std::fs::create_dir_all(&commands).unwrap();
    std::fs::write(commands.join("greet.md"), "Say hello to $ARGUMENTS.").unwrap();
    std::fs::write(commands.join("status.md"), "Show the git status.").unwrap();
    let server = MockServer::start();
    server.enqueue(chat::text_response("Hello, Bob."));
    server.enqueue(chat::text_response("Planned."));
    let mut pty = repl(&env, &server, &[]);
    pty.expect("act › ", WAIT);

    pty.send("/help\r");
    pty.expect("/greet [ARGS]", WAIT);
    pty.expect("› ", WAIT);
    let help = pty.screen();
    for name in [
        "/exit",
        "/model",
        "/mode",
        "/context",
        "/agent",
        "/resume",
        "/cogni:status",
        "/status [ARGS]",
    ] {
        assert!(help.contains(name), "{name} missing from /help:\n{help}");
    }

    pty.send("/greet Bob\r");
    pty.expect("Hello, Bob.", WAIT);
    pty.expect("› ", WAIT);

    pty.send("/mode plan\r");
    pty.expect("sandbox read-only", WAIT);
    pty.expect("plan › ", WAIT);
    pty.send("/cogni:status\r");
    pty.expect("mode: plan · sandbox read-only · approval untrusted", WAIT);
    pty.expect("› ", WAIT);

    pty.send("/context checkpoint start\r");
    pty.expect("checkpoint `start` saved", WAIT);
    pty.send("/context pop 2\r");
    pty.expect("removed", WAIT);
    pty.send("/context rollback start\r");
    pty.expect("rolled back to `start`", WAIT);
    pty.expect("› ", WAIT);

    pty.send("/model gpt-4.1-mini\r");
    pty.expect("model: gpt-4.1-mini", WAIT);
    pty.expect("› ", WAIT);
    pty.send("make a plan\r");
    pty.expect("Planned.", WAIT);
    pty.expect("› ", WAIT);

    pty.send("/nonsense\r");
    pty.expect("unknown command /nonsense", WAIT);
    pty.send("/exit\r");
    assert_eq!(pty.wait(WAIT).code(), Some(0), "{}", pty.screen());

    server.assert_invariants();
    let requests = server.requests();
    assert!(requests[0].body_text().contains("Say hello to Bob."));
    let second = requests[1].body_json();
    assert_eq!(second["model"], "gpt-4.1-mini");
    let text = requests[1].body_text();
    assert!(
        text.contains("<sandbox_mode>read-only</sandbox_mode>"),
        "{text}"
    );
    assert!(text.contains("Plan mode"), "{text}");
}

#[test]
fn approval_questions_take_one_key() {
    let env = Env::new();
    let server = MockServer::start();
    server.enqueue(chat::tool_calls_response(&[(
        "call_1",
        "shell",
        r#"{"command":"touch created.txt"}"#,
    )]));
    server.enqueue(chat::text_response("created"));
    let mut pty = repl(&env, &server, &["--mode", "act", "--approval", "untrusted"]);
    pty.expect("act › ", WAIT);
    pty.send("make the file\r");
    pty.expect("Allow shell: touch created.txt", WAIT);
    pty.expect("tell the model why >", WAIT);
    pty.send("y");
    pty.expect("created", WAIT);
    pty.expect("› ", WAIT);
    assert!(env.work().join("created.txt").exists());
    pty.send("\x04");
    assert_eq!(pty.wait(WAIT).code(), Some(0));
}

#[test]
fn ctrl_c_twice_at_an_empty_prompt_leaves() {
    let env = Env::new();
    let server = MockServer::start();
    let mut pty = repl(&env, &server, &[]);
    let before = pty.modes();
    pty.expect("› ", WAIT);
    pty.send("some text");
    pty.send("\x03");
    pty.expect("› ", WAIT);
    pty.send("\x03");
    pty.expect("Ctrl-C again to quit", WAIT);
    pty.send("\x03");
    assert_eq!(pty.wait(WAIT).code(), Some(0));
    assert_eq!(pty.modes(), before);
    assert_eq!(server.request_count(), 0);
}

#[test]
fn esc_at_the_prompt_clears_the_line_and_never_changes_the_next_one() {
    let env = Env::new();
    let server = MockServer::start();
    let mut pty = repl(&env, &server, &[]);
    pty.expect("› ", WAIT);
    // Esc, then a command typed as a person types it: still a command
    // (it was sent to the model as "status" when Esc began an Alt-key).
    pty.send("\x1b");
    std::thread::sleep(Duration::from_millis(200));
    pty.send("/status\r");
    pty.expect("cwd:", WAIT);
    pty.expect("› ", WAIT);
    // Text, Esc: the line is gone; what follows is a line of its own.
    pty.send("tell the model this");
    std::thread::sleep(Duration::from_millis(200));
    pty.send("\x1b");
    std::thread::sleep(Duration::from_millis(200));
    pty.send("/status\r");
    pty.expect("cwd:", WAIT);
    pty.expect("› ", WAIT);
    // Arrow keys still work: their bytes come together.
    pty.send("\x1b[A\x1b[B");
    pty.send("\x04");
    assert_eq!(pty.wait(WAIT).code(), Some(0));
    assert_eq!(server.request_count(), 0, "nothing reached the model");
}

#[test]
fn shift_tab_cycles_the_modes_and_keeps_the_line() {
    let env = Env::new();
    let server = MockServer::start();
    server.enqueue(chat::text_response("planned"));
    let mut pty = repl(&env, &server, &[]);
    pty.expect("act › ", WAIT);
    pty.send("look at the parser");
    std::thread::sleep(Duration::from_millis(200));
    // Shift-Tab: act -> auto -> plan, the text typed stays on the line.
    pty.send("\x1b[Z");
    pty.expect("mode: auto (", WAIT);
    pty.expect("auto › look at the parser", WAIT);
    pty.send("\x1b[Z");
    pty.expect("mode: plan (", WAIT);
    pty.expect("plan › look at the parser", WAIT);
    pty.send("\r");
    pty.expect("planned", WAIT);
    pty.expect("plan › ", WAIT);
    pty.send("\x04");
    assert_eq!(pty.wait(WAIT).code(), Some(0));
    let request = server.requests()[0].body_text();
    assert!(request.contains("look at the parser"), "{request}");
    // The system prompt says "read-only" in every mode; the environment
    // block names the mode the switch set.
    assert!(
        request.contains("<sandbox_mode>read-only</sandbox_mode>"),
        "plan mode's sandbox: {request}"
    );
}

#[test]
fn cost_shows_the_sessions_and_the_last_turns_spend() {
    let env = Env::new();
    let server = MockServer::start();
    server.enqueue(chat::text_response("first"));
    server.enqueue(chat::text_response("second"));
    let mut pty = repl(&env, &server, &[]);
    pty.expect("› ", WAIT);
    pty.send("/cost\r");
    pty.expect("session: 0 requests · 0 tokens in · 0 out · $0.0000", WAIT);
    pty.expect("› ", WAIT);
    pty.send("one\r");
    pty.expect("first", WAIT);
    pty.expect("› ", WAIT);
    pty.send("two\r");
    pty.expect("second", WAIT);
    pty.expect("› ", WAIT);
    pty.send("/cost\r");
    // Each mock response reports 10 tokens in and 5 out.
    pty.expect("session: 2 requests · 20 tokens in · 10 out · $", WAIT);
    pty.expect("last turn: 1 request · 10 tokens in · 5 out · $", WAIT);
    pty.expect("› ", WAIT);
    let screen = pty.screen();
    let line = screen
        .lines()
        .rev()
        .find(|l| l.starts_with("session: 2 requests"))
        .unwrap();
    assert!(line.contains(" out · $"), "priced: {line}");
    pty.send("\x04");
    assert_eq!(pty.wait(WAIT).code(), Some(0));
}

#[test]
fn no_color_and_narrow_terminals_are_respected() {
    let env = Env::new();
    let server = MockServer::start();
    server.enqueue(chat::text_response("Some **bold** text\n"));
    let mut cmd = cogni(&env, Some(&server), &["repl"]);
    cmd.env("NO_COLOR", "1");
    let mut pty = Pty::spawn(cmd, 30);
    pty.expect("› ", WAIT);
    pty.send("hi\r");
    pty.expect("Some **bold** text", WAIT);
    pty.expect("› ", WAIT);
    pty.send("/status\r");
    pty.expect("› ", WAIT);
    let raw = pty.raw();
    assert!(
        !raw.contains("\x1b[1m") && !raw.contains("\x1b[36m"),
        "{raw:?}"
    );
    for line in pty.screen().lines().filter(|l| l.starts_with("cwd:")) {
        assert!(
            line.chars().count() <= 30,
            "fits a 30-column terminal: {line}"
        );
    }
    pty.send("\x04");
    assert_eq!(pty.wait(WAIT).code(), Some(0));
}

#[test]
fn without_a_terminal_there_is_no_ansi_and_no_prompt_hang() {
    let env = Env::new();
    let script = env.write(
        "script.toml",
        "[[turns]]\ntext = \"# Heading\\nplain **answer**\"\n",
    );
    let mut child = cogni(&env, None, &["repl", "--script"])
        .arg(script)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    use std::io::Write;
    child
        .stdin
        .take()
        .unwrap()
        .write_all(b"hello\n/status\n")
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(0));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("plain **answer**"), "{stdout}");
    assert!(stdout.contains("mode: act"), "{stdout}");
    assert!(!stdout.contains('\x1b'), "{stdout:?}");
}

#[test]
fn a_bare_prompt_starts_the_repl_with_it_as_the_first_message() {
    let env = Env::new();
    let server = MockServer::start();
    server.enqueue(chat::text_response("Fixed it."));
    let mut pty = Pty::spawn(cogni(&env, Some(&server), &["fix the failing test"]), 100);
    pty.expect("fix the failing test", WAIT);
    pty.expect("Fixed it.", WAIT);
    pty.expect("› ", WAIT);
    pty.send("\x04");
    assert_eq!(pty.wait(WAIT).code(), Some(0));
    let body = server.requests()[0].body_text();
    assert!(body.contains("fix the failing test"), "{body}");
}

#[test]
fn cogni_without_a_command_and_without_a_terminal_is_a_usage_error() {
    let env = Env::new();
    let out = cogni(&env, None, &[])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("cogni run"));
}

#[test]
fn agent_cards_switch_model_instructions_and_mode() {
    let env = Env::new();
    let agents = env.work().join(".cogni/agents");
    std::fs::create_dir_all(&agents).unwrap();
    std::fs::write(
        agents.join("reviewer.md"),
        "+++\ndescription = \"Reviews, never edits\"\nmodel = \"gpt-4.1-mini\"\ntools = [\"read_file\", \"grep\"]\nmode = \"plan\"\n+++\nYou review code for bugs.\n",
    )
    .unwrap();
    // A project's own cards count once the directory is trusted.
    let trusted = env.cmd().args(["trust", "."]).output().unwrap();
    assert_eq!(trusted.status.code(), Some(0));
    let server = MockServer::start();
    server.enqueue(chat::text_response("Looks fine."));
    // The model from config, not the command line: the card's wins over it.
    let mut cmd = cogni(&env, None, &["repl"]);
    cmd.env("OPENAI_BASE_URL", server.base_url())
        .env("OPENAI_API_KEY", "sk-test-key-for-the-mock")
        .env("COGNI_MODEL", "gpt-4.1");
    let mut pty = Pty::spawn(cmd, 100);
    pty.expect("act › ", WAIT);
    pty.send("/agent\r");
    pty.expect("reviewer", WAIT);
    pty.expect("Reviews, never edits [gpt-4.1-mini, plan]", WAIT);
    pty.send("/agent reviewer\r");
    pty.expect("agent: reviewer · model gpt-4.1-mini", WAIT);
    pty.expect("plan › ", WAIT);
    pty.send("/tools\r");
    pty.expect("grep", WAIT);
    pty.expect("› ", WAIT);
    pty.send("review src\r");
    pty.expect("Looks fine.", WAIT);
    pty.expect("› ", WAIT);
    pty.send("/exit\r");
    assert_eq!(pty.wait(WAIT).code(), Some(0));
    let request = server.requests()[0].body_json().clone();
    assert_eq!(request["model"], "gpt-4.1-mini");
    assert_eq!(tool_names(&request), ["read_file", "grep"]);
    assert!(server.requests()[0]
        .body_text()
        .contains("You review code for bugs."));
}

#[test]
fn resume_last_reopens_the_conversation_and_sessions_lists_it() {
    let env = Env::new();
    let server = MockServer::start();
    server.enqueue(chat::text_response("Noted: blue."));
    let mut pty = repl(&env, &server, &[]);
    pty.expect("› ", WAIT);
    pty.send("my favourite color is blue\r");
    pty.expect("Noted: blue.", WAIT);
    pty.expect("› ", WAIT);
    pty.send("\x04");
    assert_eq!(pty.wait(WAIT).code(), Some(0));

    server.enqueue(chat::text_response("You said blue."));
    let mut pty = Pty::spawn(cogni(&env, Some(&server), &["resume", "--last"]), 100);
    pty.expect("(resumed)", WAIT);
    // The conversation so far is shown, then the prompt.
    pty.expect("› my favourite color is blue", WAIT);
    pty.expect("── now ──", WAIT);
    pty.expect("› ", WAIT);
    pty.send("/sessions\r");
    pty.expect("my favourite", WAIT);
    pty.expect("› ", WAIT);
    pty.send("what is my favourite color?\r");
    pty.expect("You said blue.", WAIT);
    pty.expect("› ", WAIT);
    pty.send("\x04");
    assert_eq!(pty.wait(WAIT).code(), Some(0));
    server.assert_invariants();
    let body = server.requests()[1].body_text();
    assert!(
        body.contains("my favourite color is blue") && body.contains("Noted: blue."),
        "{body}"
    );
}

#[test]
fn model_output_cannot_act_on_the_terminal() {
    let env = Env::new();
    let server = MockServer::start();
    server.enqueue(chat::text_response(
        "before\x1b[2J\x1b]0;pwned\x07\x1b]52;c;ZXZpbA==\x07 after\n",
    ));
    let mut pty = repl(&env, &server, &[]);
    pty.expect("› ", WAIT);
    pty.send("hi\r");
    pty.expect("before after", WAIT);
    pty.expect("› ", WAIT);
    let raw = pty.raw();
    for bad in ["\x1b[2J", "\x1b]0;", "\x1b]52;"] {
        assert!(!raw.contains(bad), "{bad:?} reached the terminal: {raw:?}");
    }
    pty.send("\x04");
    assert_eq!(pty.wait(WAIT).code(), Some(0));
}

#[test]
fn jobs_lists_and_stops_background_jobs() {
    let env = Env::new();
    let marker = format!("{}.4321", 6000 + std::process::id() % 1000);
    let script = env.write(
        "script.toml",
        &format!(
            "[[turns]]\ntext = \"\"\ntool_calls = [{{ name = \"shell\", arguments = {{ command = \"sleep {marker}\", background = true }} }}]\n\
             [[turns]]\ntext = \"the server runs\"\n"
        ),
    );
    let mut child = cogni(&env, None, &["repl", "--no-sandbox", "--script"])
        .arg(script)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    use std::io::Write;
    child
        .stdin
        .take()
        .unwrap()
        .write_all(b"start the server\n/jobs\n/jobs kill 1\n/jobs\n/jobs kill x\n")
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(0));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("the server runs"), "{stdout}");
    let listed = stdout
        .find("background jobs:")
        .unwrap_or_else(|| panic!("{stdout}"));
    assert!(stdout[listed..].contains("running"), "{stdout}");
    assert!(
        stdout[listed..].contains(&format!("sleep {marker}")),
        "{stdout}"
    );
    assert!(stdout.contains("stopped by shell_kill"), "{stdout}");
    assert!(stdout.contains("no background jobs"), "{stdout}");
    assert!(stdout.contains("`x` is not a job number"), "{stdout}");
    assert!(processes_with(&format!("sleep\u{0}{marker}")).is_empty());
}

#[test]
fn session_hooks_run_at_the_first_prompt_and_at_exit_or_sigterm() {
    let env = Env::new();
    let log = env.dir.path().join("hooks.log");
    std::fs::write(
        env.dir.path().join("home/config.toml"),
        format!(
            "[[hooks.SessionStart]]\ncommand = \"grep -o '\\\"source\\\":\\\"[a-z]*\\\"' >> {log}\"\n\
             [[hooks.SessionEnd]]\ncommand = \"grep -o '\\\"reason\\\":\\\"[a-z]*\\\"' >> {log}\"\n",
            log = log.display()
        ),
    )
    .unwrap();
    let server = MockServer::start();
    server.enqueue(chat::text_response("Hi."));
    server.enqueue(chat::text_response("Hi again."));
    let logged = || std::fs::read_to_string(&log).unwrap_or_default();

    let mut pty = repl(&env, &server, &[]);
    pty.expect("› ", WAIT);
    assert_eq!(logged(), "", "SessionStart waits for the first prompt");
    pty.send("hello\r");
    pty.expect("Hi.", WAIT);
    pty.expect("› ", WAIT);
    pty.send("/exit\r");
    assert_eq!(pty.wait(WAIT).code(), Some(0), "{}", pty.screen());
    assert_eq!(logged(), "\"source\":\"startup\"\n\"reason\":\"exit\"\n");

    let mut pty = repl(&env, &server, &[]);
    pty.expect("› ", WAIT);
    pty.send("hello\r");
    pty.expect("Hi again.", WAIT);
    pty.expect("› ", WAIT);
    pty.signal(libc::SIGTERM);
    assert_eq!(pty.wait(WAIT).code(), Some(143), "{}", pty.screen());
    assert_eq!(
        logged(),
        "\"source\":\"startup\"\n\"reason\":\"exit\"\n\"source\":\"startup\"\n\"reason\":\"signal\"\n"
    );
}

#[test]
fn the_plan_checklist_is_redrawn_in_place_and_update_plan_calls_are_not_listed() {
    let env = Env::new();
    std::fs::write(
        env.dir.path().join("home/config.toml"),
        "[agent]\nenable_plan = true\n",
    )
    .unwrap();
    let script = env.write(
        "script.toml",
        r#"
[[turns]]
text = "1. look\n2. answer"
[[turns]]
[[turns.tool_calls]]
name = "update_plan"
arguments = { plan = [{ step = "look", status = "in_progress" }, { step = "answer", status = "pending" }] }
[[turns]]
[[turns.tool_calls]]
name = "update_plan"
arguments = { plan = [{ step = "look", status = "completed" }, { step = "answer", status = "in_progress" }] }
[[turns]]
text = "All done."
"#,
    );
    let script = script.to_string_lossy().into_owned();
    let mut pty = Pty::spawn(cogni(&env, None, &["repl", "--script", &script]), 100);
    pty.expect("› ", WAIT);
    pty.send("go\r");
    pty.expect("All done.", WAIT);
    pty.expect("› ", WAIT);
    let raw = pty.raw();
    // Three checklists of three lines each (the heading and two steps);
    // the second and third each go back over the one before.
    assert_eq!(raw.matches("\x1b[3A\r\x1b[J").count(), 2, "{raw:?}");
    assert!(raw.contains("✓ look"), "{raw:?}");
    assert!(!pty.screen().contains("update_plan"), "{}", pty.screen());
    pty.send("\x04");
    assert_eq!(pty.wait(WAIT).code(), Some(0));
}

/// Whether any of `lines` contains `needle`.
fn mentions(lines: &[String], needle: &str) -> bool {
    lines.iter().any(|l| l.contains(needle))
}

#[test]
fn compact_summarises_the_history_and_the_next_request_carries_the_summary() {
    use cogni::agent::compact::SUMMARY_REQUEST;
    let env = Env::new();
    let server = MockServer::start();
    server.enqueue(chat::text_response("ALPHA-ANSWER"));
    server.enqueue(chat::text_response("BETA-ANSWER"));
    server.enqueue(chat::text_response("SUMMARY-OF-ALPHA-AND-BETA"));
    server.enqueue(chat::text_response("GAMMA-ANSWER"));
    let mut pty = repl(&env, &server, &[]);
    pty.expect("› ", WAIT);
    pty.send("first question alpha\r");
    pty.expect("ALPHA-ANSWER", WAIT);
    pty.expect("› ", WAIT);
    pty.send("second question beta\r");
    pty.expect("BETA-ANSWER", WAIT);
    pty.expect("› ", WAIT);
    pty.send("/compact\r");
    pty.expect("compacted history:", WAIT);
    pty.expect("› ", WAIT);
    pty.send("third question gamma\r");
    pty.expect("GAMMA-ANSWER", WAIT);
    pty.expect("› ", WAIT);
    pty.send("/exit\r");
    assert_eq!(pty.wait(WAIT).code(), Some(0), "{}", pty.screen());
    server.assert_invariants();

    let requests = server.requests();
    assert_eq!(requests.len(), 4);
    // The summary request: the whole conversation, then the question.
    let summary = requests[2].message_lines();
    assert_eq!(
        summary.last().map(String::as_str),
        Some(format!("user: {SUMMARY_REQUEST}").as_str()),
        "{summary:#?}"
    );
    for said in ["first question alpha", "ALPHA-ANSWER", "BETA-ANSWER"] {
        assert!(mentions(&summary, said), "{said}: {summary:#?}");
    }
    // The next request: the summary instead of the old turns (the latest
    // request before the compaction stays, as compaction keeps it).
    let next = requests[3].message_lines();
    assert!(mentions(&next, "SUMMARY-OF-ALPHA-AND-BETA"), "{next:#?}");
    assert_eq!(
        next.last().map(String::as_str),
        Some("user: third question gamma")
    );
    for gone in [
        "first question alpha",
        "ALPHA-ANSWER",
        "BETA-ANSWER",
        SUMMARY_REQUEST,
    ] {
        assert!(!mentions(&next, gone), "{gone} is still sent: {next:#?}");
    }
    assert!(mentions(&next, "second question beta"), "{next:#?}");
    // The system prompt (the cached prefix) is the same.
    assert_eq!(requests[3].messages()[0], requests[0].messages()[0]);
}

#[test]
fn context_reset_keeps_the_initial_context_and_summarize_keeps_plan_instructions_and_skills() {
    use cogni::agent::compact::SUMMARY_REQUEST;
    let env = Env::new();
    let home = env.dir.path().join("home");
    std::fs::write(
        home.join("config.toml"),
        "developer_instructions = \"DEV-RULES: be brief.\"\n[agent]\nenable_plan = true\n[features]\nskills_enabled = true\n",
    )
    .unwrap();
    std::fs::write(home.join("AGENTS.md"), "USER-RULES: use tabs.\n").unwrap();
    std::fs::create_dir_all(home.join("skills/checklist")).unwrap();
    std::fs::write(
        home.join("skills/checklist/SKILL.md"),
        "---\nname: checklist\ndescription: Work through a checklist.\n---\nCHECKLIST-PROCEDURE: tick each box.\n",
    )
    .unwrap();
    let server = MockServer::start();
    for answer in [
        "1. look around\n2. answer",
        "ONE-ANSWER",
        "TWO-ANSWER",
        "THREE-ANSWER",
        "SUMMARY-OF-TWO-AND-THREE",
        "FOUR-ANSWER",
    ] {
        server.enqueue(chat::text_response(answer));
    }
    let mut pty = repl(&env, &server, &[]);
    pty.expect("› ", WAIT);
    pty.send("first task with $checklist\r");
    pty.expect("ONE-ANSWER", WAIT);
    pty.expect("› ", WAIT);
    pty.send("/context reset\r");
    pty.expect("context reset to the initial context", WAIT);
    pty.expect("› ", WAIT);
    pty.send("second message\r");
    pty.expect("TWO-ANSWER", WAIT);
    pty.expect("› ", WAIT);
    pty.send("third message with $checklist\r");
    pty.expect("THREE-ANSWER", WAIT);
    pty.expect("› ", WAIT);
    pty.send("/context summarize\r");
    pty.expect("history replaced by a summary", WAIT);
    pty.expect("› ", WAIT);
    pty.send("fourth message\r");
    pty.expect("FOUR-ANSWER", WAIT);
    pty.expect("› ", WAIT);
    pty.send("/exit\r");
    assert_eq!(pty.wait(WAIT).code(), Some(0), "{}", pty.screen());
    server.assert_invariants();

    let requests = server.requests();
    assert_eq!(requests.len(), 6);
    // The first turn: the initial context (instructions, environment, the
    // plan), then the message and the skill it names.
    let first = requests[1].message_lines();
    let task = first
        .iter()
        .position(|l| l == "user: first task with $checklist")
        .unwrap_or_else(|| panic!("{first:#?}"));
    let initial = &first[..task];
    for kept in [
        "DEV-RULES",
        "USER-RULES",
        "1. look around",
        "<environment_context>",
    ] {
        assert!(mentions(initial, kept), "{kept}: {initial:#?}");
    }
    assert_eq!(first.len(), task + 2, "{first:#?}");
    assert!(
        first[task + 1].contains("CHECKLIST-PROCEDURE"),
        "{first:#?}"
    );

    // After reset: exactly the initial context, then the new message.
    let mut expected = initial.to_vec();
    expected.push("user: second message".into());
    assert_eq!(requests[2].message_lines(), expected);

    // The summary request covers the conversation since.
    let summary = requests[4].message_lines();
    assert_eq!(
        summary.last().map(String::as_str),
        Some(format!("user: {SUMMARY_REQUEST}").as_str())
    );
    for said in ["second message", "TWO-ANSWER", "THREE-ANSWER"] {
        assert!(mentions(&summary, said), "{said}: {summary:#?}");
    }

    // After summarize: the instructions, the plan and the skill stay, the
    // summary replaces every message.
    let next = requests[5].message_lines();
    for kept in [
        "DEV-RULES",
        "USER-RULES",
        "1. look around",
        "<environment_context>",
        "CHECKLIST-PROCEDURE",
        "SUMMARY-OF-TWO-AND-THREE",
    ] {
        assert!(mentions(&next, kept), "{kept} is lost: {next:#?}");
    }
    for gone in [
        "first task",
        "ONE-ANSWER",
        "second message",
        "TWO-ANSWER",
        "third message",
        "THREE-ANSWER",
        SUMMARY_REQUEST,
    ] {
        assert!(!mentions(&next, gone), "{gone} is still sent: {next:#?}");
    }
    assert_eq!(
        next.last().map(String::as_str),
        Some("user: fourth message")
    );
}

#[test]
fn resume_without_an_id_picks_a_session_and_shows_its_conversation() {
    let env = Env::new();
    let script = env.write("answer.toml", "[[turns]]\ntext = \"the answer\"\n");
    for task in ["fix the parser", "write the docs"] {
        let out = env
            .cmd()
            .args(["run", "--script"])
            .arg(&script)
            .arg(task)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(0));
        // Distinct modification times order the picker.
        std::thread::sleep(Duration::from_millis(1100));
    }
    let mut cmd = cogni(&env, None, &["resume", "--script"]);
    cmd.arg(&script);
    let mut pty = Pty::spawn(cmd, 120);
    pty.expect("resume a session of", WAIT);
    pty.expect("write the docs", WAIT);
    pty.expect("fix the parser", WAIT);
    // Type to filter, move, open.
    pty.send("pars");
    pty.expect("filter: pars", WAIT);
    pty.send("\x1b[B\r");
    pty.expect("(resumed)", WAIT);
    pty.expect("── earlier in this session ──", WAIT);
    pty.expect("› fix the parser", WAIT);
    pty.expect("the answer", WAIT);
    pty.expect("── now ──", WAIT);
    pty.expect("› ", WAIT);
    pty.send("/exit\r");
    assert_eq!(pty.wait(WAIT).code(), Some(0), "{}", pty.screen());
    let screen = pty.screen();
    let replayed = &screen[screen.find("── earlier").unwrap()..];
    assert!(!replayed.contains("write the docs"), "{replayed}");

    // Esc cancels; without a terminal it says how to name one.
    let mut cmd = cogni(&env, None, &["resume"]);
    cmd.arg("--script").arg(&script);
    let mut pty = Pty::spawn(cmd, 120);
    pty.expect("resume a session of", WAIT);
    pty.send("\x1b");
    pty.expect("no session chosen", WAIT);
    assert_eq!(pty.wait(WAIT).code(), Some(0));
    let out = env.cmd().arg("resume").output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--last"));
}

#[test]
fn an_image_named_with_at_or_given_with_image_reaches_the_model_as_an_image() {
    let env = Env::new();
    let server = MockServer::start();
    server.enqueue(chat::text_response("TWO SHAPES"));
    server.enqueue(chat::text_response("A CIRCLE"));
    let first = crate::common::images::png(6, 4);
    let second = crate::common::images::png(5, 5);
    std::fs::write(env.work().join("first.png"), &first).unwrap();
    std::fs::write(env.work().join("circle.png"), &second).unwrap();
    let mut pty = repl(&env, &server, &["--image", "first.png"]);
    pty.expect(
        "attached to your first message: first.png (image/png, 6×4, ",
        WAIT,
    );
    pty.expect("› ", WAIT);
    pty.send("what are these?\r");
    pty.expect("TWO SHAPES", WAIT);
    pty.expect("› ", WAIT);
    pty.send("and @circle.png?\r");
    pty.expect("attached: circle.png (image/png, 5×5, ", WAIT);
    pty.expect("A CIRCLE", WAIT);
    pty.expect("› ", WAIT);
    pty.send("\x04");
    assert_eq!(pty.wait(WAIT).code(), Some(0), "{}", pty.screen());
    server.assert_invariants();
    use crate::common::images::b64;
    let requests = server.requests();
    let one = requests[0].body_text();
    assert!(
        one.contains(&b64(&first)),
        "the --image file goes with the first message"
    );
    let two = requests[1].messages();
    let last = two.last().unwrap();
    assert_eq!(last["content"][0]["text"], "and @circle.png?");
    assert_eq!(
        last["content"][1]["image_url"]["url"],
        format!("data:image/png;base64,{}", b64(&second))
    );
}
