//! The signals that ask cogni to stop: SIGINT (Ctrl-C; GitHub Actions
//! cancelling a job sends it first), SIGTERM (GitLab, Kubernetes,
//! Buildkite, `docker stop`, `kill`) and SIGHUP (the terminal went away).
//!
//! Every front door treats the three alike: the first stops the running
//! work cleanly (running commands are killed, every call gets its output,
//! results and the session are written), a second exits at once. The exit
//! code says which signal it was: 128 + its number (130, 143, 129).
//!
//! On Windows the console's events stand for them: Ctrl-C for SIGINT,
//! Ctrl-Break for SIGTERM and the console window closing for SIGHUP, with
//! the same exit codes.

use std::sync::{Arc, OnceLock};

/// One of the signals that interrupt cogni.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Interrupt {
    /// SIGINT: Ctrl-C.
    Int,
    /// SIGTERM: a CI system or a container runtime cancelling the job.
    Term,
    /// SIGHUP: the terminal closed.
    Hup,
}

impl Interrupt {
    /// Its number, the same on every Unix (and used for the exit code on
    /// Windows too).
    fn number(self) -> i32 {
        match self {
            Interrupt::Int => 2,
            Interrupt::Term => 15,
            Interrupt::Hup => 1,
        }
    }

    /// The exit code after this signal: 128 + its number, as a shell
    /// reports a process it killed.
    pub fn exit_code(self) -> u8 {
        // Signal numbers of these three are 1, 2 and 15.
        128u8.saturating_add(self.number() as u8)
    }

    pub fn name(self) -> &'static str {
        match self {
            Interrupt::Int => "SIGINT",
            Interrupt::Term => "SIGTERM",
            Interrupt::Hup => "SIGHUP",
        }
    }

    /// How the user is told what came: "Ctrl-C" or the signal's name.
    pub fn describe(self) -> &'static str {
        match self {
            Interrupt::Int => "Ctrl-C",
            other => other.name(),
        }
    }
}

/// Listens for the three signals. While it exists, none of them kills the
/// process with its default action.
#[cfg(unix)]
pub struct Interrupts {
    int: tokio::signal::unix::Signal,
    term: tokio::signal::unix::Signal,
    hup: tokio::signal::unix::Signal,
}

/// Listens for Ctrl-C, Ctrl-Break and the console closing. While it
/// exists, none of them ends the process by itself.
#[cfg(windows)]
pub struct Interrupts {
    int: tokio::signal::windows::CtrlC,
    term: tokio::signal::windows::CtrlBreak,
    hup: tokio::signal::windows::CtrlClose,
}

impl Interrupts {
    /// Start listening; must run inside the tokio runtime. Signals that
    /// arrive from now on are queued for [`Interrupts::recv`].
    #[cfg(unix)]
    pub fn listen() -> Result<Self, String> {
        use tokio::signal::unix::{signal, SignalKind};
        let listen = |kind: SignalKind, name: &str| {
            signal(kind).map_err(|e| format!("cannot listen for {name}: {e}"))
        };
        Ok(Interrupts {
            int: listen(SignalKind::interrupt(), "SIGINT")?,
            term: listen(SignalKind::terminate(), "SIGTERM")?,
            hup: listen(SignalKind::hangup(), "SIGHUP")?,
        })
    }

    /// Start listening; must run inside the tokio runtime. Events that
    /// arrive from now on are queued for [`Interrupts::recv`].
    #[cfg(windows)]
    pub fn listen() -> Result<Self, String> {
        use tokio::signal::windows as console;
        fn failed(name: &'static str) -> impl Fn(std::io::Error) -> String {
            move |e| format!("cannot listen for {name}: {e}")
        }
        Ok(Interrupts {
            int: console::ctrl_c().map_err(failed("Ctrl-C"))?,
            term: console::ctrl_break().map_err(failed("Ctrl-Break"))?,
            hup: console::ctrl_close().map_err(failed("the console closing"))?,
        })
    }

    /// The next signal; `None` once no more can arrive.
    pub async fn recv(&mut self) -> Option<Interrupt> {
        tokio::select! {
            Some(()) = self.int.recv() => Some(Interrupt::Int),
            Some(()) = self.term.recv() => Some(Interrupt::Term),
            Some(()) = self.hup.recv() => Some(Interrupt::Hup),
            else => None,
        }
    }
}

/// The first signal received, once one was.
#[derive(Debug, Clone, Default)]
pub struct Received(Arc<OnceLock<Interrupt>>);

impl Received {
    pub fn get(&self) -> Option<Interrupt> {
        self.0.get().copied()
    }

    fn set(&self, signal: Interrupt) {
        let _ = self.0.set(signal);
    }

    /// The exit code of an interrupted run: the signal's, or 130 when
    /// the work stopped for another reason.
    pub fn exit_code(&self) -> u8 {
        self.get()
            .map_or(super::exit::INTERRUPTED, Interrupt::exit_code)
    }
}

/// The first signal calls `stop` (which stops the work cleanly); a second
/// one exits at once with its exit code. Must run inside the runtime; the
/// signals are caught from the moment this returns.
pub fn stop_on_interrupt(
    stop: impl FnOnce(Interrupt) + Send + 'static,
) -> Result<Received, String> {
    let mut interrupts = Interrupts::listen()?;
    let received = Received::default();
    let first = received.clone();
    tokio::spawn(async move {
        if let Some(signal) = interrupts.recv().await {
            first.set(signal);
            stop(signal);
            if let Some(again) = interrupts.recv().await {
                exit_now(again);
            }
        }
    });
    Ok(received)
}

/// Leave at once after a second signal.
pub fn exit_now(signal: Interrupt) -> ! {
    eprintln!("cogni: {}: quitting at once", signal.describe());
    std::process::exit(i32::from(signal.exit_code()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exit_codes_follow_the_shell_convention() {
        assert_eq!(Interrupt::Int.exit_code(), 130);
        assert_eq!(Interrupt::Term.exit_code(), 143);
        assert_eq!(Interrupt::Hup.exit_code(), 129);
        assert_eq!(Received::default().exit_code(), 130);
    }
}
