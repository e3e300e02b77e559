//! Drive the real binary on a pseudo-terminal: the child gets the terminal
//! as its controlling terminal (so Ctrl-C written to the master becomes
//! SIGINT, as for a person), everything it writes is collected, and
//! [`Pty::expect`] waits for text to appear (ANSI sequences stripped).

use std::io::{Read, Write};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::process::CommandExt;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

pub struct Pty {
    master: std::fs::File,
    /// Kept open so the terminal's settings can be read after the child exits.
    slave: OwnedFd,
    pub child: Child,
    output: Arc<Mutex<Vec<u8>>>,
    /// Where the next `expect` starts looking (in the stripped text).
    cursor: usize,
}

/// `text` without ANSI escape sequences and carriage returns.
pub fn strip_ansi(text: &str) -> String {
    let mut out = String::new();
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\x1b' => {
                if chars.peek() == Some(&'[') {
                    chars.next();
                    for e in chars.by_ref() {
                        if ('@'..='~').contains(&e) {
                            break;
                        }
                    }
                } else {
                    chars.next();
                }
            }
            '\r' => {}
            c => out.push(c),
        }
    }
    out
}

fn openpty(cols: u16) -> (std::fs::File, OwnedFd) {
    let mut master = 0;
    let mut slave = 0;
    let size = libc::winsize {
        ws_row: 40,
        ws_col: cols,
        ws_xpixel: 0,
        ws_ypixel: 0,
    };
    // SAFETY: openpty writes two new descriptors we then own.
    let rc = unsafe {
        libc::openpty(
            &mut master,
            &mut slave,
            std::ptr::null_mut(),
            std::ptr::null(),
            &size,
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

/// The terminal settings that matter for "restored": input, output, local
/// flags and the control characters.
pub type Modes = (u32, u32, u32, Vec<u8>);

impl Pty {
    /// Spawn `cmd` with stdin, stdout and stderr on a new terminal of
    /// `cols` columns.
    pub fn spawn(mut cmd: Command, cols: u16) -> Pty {
        let (master, slave) = openpty(cols);
        cmd.stdin(Stdio::from(slave.try_clone().unwrap()))
            .stdout(Stdio::from(slave.try_clone().unwrap()))
            .stderr(Stdio::from(slave.try_clone().unwrap()));
        // SAFETY: only async-signal-safe calls between fork and exec.
        unsafe {
            cmd.pre_exec(|| {
                if libc::setsid() < 0 {
                    return Err(std::io::Error::last_os_error());
                }
                if libc::ioctl(0, libc::TIOCSCTTY, 0) < 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
        let child = cmd.spawn().unwrap();
        let output = Arc::new(Mutex::new(Vec::new()));
        {
            let output = output.clone();
            let mut master = master.try_clone().unwrap();
            std::thread::spawn(move || {
                let mut buf = [0u8; 4096];
                // Ends with EIO once every holder of the slave closed it.
                while let Ok(n) = master.read(&mut buf) {
                    if n == 0 {
                        break;
                    }
                    output.lock().unwrap().extend_from_slice(&buf[..n]);
                }
            });
        }
        Pty {
            master,
            slave,
            child,
            output,
            cursor: 0,
        }
    }

    /// Everything written so far, raw.
    pub fn raw(&self) -> String {
        String::from_utf8_lossy(&self.output.lock().unwrap()).into_owned()
    }

    /// Everything written so far, without escape sequences.
    pub fn screen(&self) -> String {
        strip_ansi(&self.raw())
    }

    pub fn send(&mut self, text: &str) {
        self.master.write_all(text.as_bytes()).unwrap();
        self.master.flush().unwrap();
    }

    /// Wait until `needle` appears after the previous match; panics with
    /// the screen after `timeout`.
    pub fn expect(&mut self, needle: &str, timeout: Duration) {
        assert!(
            self.appears(needle, timeout),
            "`{needle}` did not appear within {timeout:?}; screen after the last match:\n{}",
            self.screen().get(self.cursor..).unwrap_or("")
        );
    }

    /// Whether `needle` appears after the previous match within `timeout`
    /// (the next match then starts after it).
    pub fn appears(&mut self, needle: &str, timeout: Duration) -> bool {
        let deadline = Instant::now() + timeout;
        loop {
            let screen = self.screen();
            if let Some(at) = screen.get(self.cursor..).and_then(|s| s.find(needle)) {
                self.cursor += at + needle.len();
                return true;
            }
            if Instant::now() >= deadline {
                return false;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// The terminal's current modes.
    pub fn modes(&self) -> Modes {
        // SAFETY: tcgetattr fills a termios we own.
        let mut t: libc::termios = unsafe { std::mem::zeroed() };
        let rc = unsafe { libc::tcgetattr(self.slave.as_raw_fd(), &mut t) };
        assert_eq!(rc, 0);
        (t.c_iflag, t.c_oflag, t.c_lflag, t.c_cc.to_vec())
    }

    /// Send `signal` to the child (as a CI system or `kill` would).
    pub fn signal(&self, signal: i32) {
        // SAFETY: signalling our own child.
        unsafe { libc::kill(self.child.id() as i32, signal) };
    }

    pub fn wait(&mut self, timeout: Duration) -> ExitStatus {
        let deadline = Instant::now() + timeout;
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                return status;
            }
            if Instant::now() > deadline {
                let _ = self.child.kill();
                panic!("the child did not exit; screen:\n{}", self.screen());
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }
}

impl Drop for Pty {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Pids of processes whose command line contains `needle`.
pub fn processes_with(needle: &str) -> Vec<u32> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        if let Ok(cmdline) = std::fs::read(entry.path().join("cmdline")) {
            let cmdline = String::from_utf8_lossy(&cmdline).replace('\0', " ");
            if cmdline.contains(needle) {
                out.push(pid);
            }
        }
    }
    out
}
