//! Approval questions with and without a terminal, through the real binary:
//! on a pseudo-terminal the user's answer decides; without one the answer
//! is "no" at once and nothing waits on stdin.

use crate::cli::Env;
use std::io::{Read, Write};
use std::os::fd::{FromRawFd, OwnedFd};
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

const SCRIPT: &str = r#"
[[turns]]
[[turns.tool_calls]]
name = "shell"
arguments = { command = "touch created.txt" }
[[turns]]
text = "finished"
"#;

/// A pseudo-terminal pair: (master, slave).
pub(crate) fn openpty() -> (std::fs::File, OwnedFd) {
    let mut master = 0;
    let mut slave = 0;
    // SAFETY: openpty writes two new descriptors we then own.
    let rc = unsafe {
        libc::openpty(
            &mut master,
            &mut slave,
            std::ptr::null_mut(),
            std::ptr::null(),
            std::ptr::null(),
        )
    };
    assert_eq!(rc, 0, "openpty failed");
    unsafe {
        (
            std::fs::File::from_raw_fd(master),
            OwnedFd::from_raw_fd(slave),
        )
    }
}

/// `cogni run --approval untrusted` of a script whose one call creates
/// `created.txt` (a command that is asked about).
pub(crate) fn cogni(env: &Env) -> Command {
    let script = env.write("script.toml", SCRIPT);
    let mut cmd = Command::new(assert_cmd::cargo::cargo_bin("cogni"));
    cmd.current_dir(env.work())
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", env.dir.path().join("home"))
        .env("COGNI_HOME", env.dir.path().join("home"))
        .args(["run", "--approval", "untrusted", "--no-color", "--script"])
        .arg(script)
        .arg("create the file");
    cmd
}

fn wait_for(text: &Mutex<String>, needle: &str) -> bool {
    let deadline = Instant::now() + Duration::from_secs(20);
    while Instant::now() < deadline {
        if text.lock().unwrap().contains(needle) {
            return true;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    false
}

fn run_on_pty(env: &Env, answer: &str) -> (std::process::Output, String) {
    let (mut master, slave) = openpty();
    let mut child = cogni(env)
        .stdin(Stdio::from(slave.try_clone().unwrap()))
        .stderr(Stdio::from(slave))
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let screen = Arc::new(Mutex::new(String::new()));
    let reader = {
        let screen = screen.clone();
        let mut master = master.try_clone().unwrap();
        std::thread::spawn(move || {
            let mut buf = [0u8; 4096];
            // Ends with EIO once the child has closed the terminal.
            while let Ok(n) = master.read(&mut buf) {
                if n == 0 {
                    break;
                }
                screen
                    .lock()
                    .unwrap()
                    .push_str(&String::from_utf8_lossy(&buf[..n]));
            }
        })
    };
    assert!(
        wait_for(&screen, "[m] no, and tell the model why >"),
        "no prompt on the terminal: {}",
        screen.lock().unwrap()
    );
    master.write_all(answer.as_bytes()).unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    while child.try_wait().unwrap().is_none() {
        assert!(Instant::now() < deadline, "cogni did not finish");
        std::thread::sleep(Duration::from_millis(20));
    }
    let output = child.wait_with_output().unwrap();
    drop(master);
    let _ = reader.join();
    let text = screen.lock().unwrap().clone();
    (output, text)
}

#[test]
fn yes_on_a_terminal_runs_the_command() {
    let env = Env::new();
    let (out, screen) = run_on_pty(&env, "y\n");
    assert_eq!(out.status.code(), Some(0), "{screen}");
    assert!(
        screen.contains("Allow shell: touch created.txt"),
        "{screen}"
    );
    assert!(screen.contains("approved"), "{screen}");
    assert!(env.work().join("created.txt").exists());
    assert_eq!(String::from_utf8_lossy(&out.stdout), "finished\n");
}

#[test]
fn no_with_a_message_on_a_terminal_is_told_to_the_model() {
    let env = Env::new();
    let (out, screen) = run_on_pty(&env, "m\nnot in this repo\n");
    assert_eq!(out.status.code(), Some(0), "{screen}");
    assert!(screen.contains("denied"), "{screen}");
    assert!(!env.work().join("created.txt").exists());
}

#[test]
fn without_a_terminal_the_answer_is_no_at_once() {
    let env = Env::new();
    let started = Instant::now();
    let out = cogni(&env)
        .arg("--json")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .output()
        .unwrap();
    assert!(started.elapsed() < Duration::from_secs(30));
    assert_eq!(out.status.code(), Some(0));
    assert!(!env.work().join("created.txt").exists());
    let stdout = String::from_utf8_lossy(&out.stdout);
    let statuses: Vec<String> = stdout
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter(|e| e["type"] == "approval")
        .map(|e| e["status"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(statuses, ["asked", "denied"], "{stdout}");
    assert!(stdout.contains("non-interactive"), "{stdout}");
}
