//! No fork server off Linux: every command is started by cogni itself
//! ([`launch`] always declines), so no served process exists.

use super::{ExecError, ExecRequest, Process, Signal};
use std::io;
use std::process::ExitStatus;
use std::time::Duration;

/// A command the server started: none here.
pub(super) enum Served {}

/// Always `None`: the command starts the usual way.
pub(super) fn launch(_req: &ExecRequest) -> Option<Result<Process, ExecError>> {
    None
}

impl Served {
    pub(super) async fn wait(&self) -> Result<ExitStatus, ExecError> {
        match *self {}
    }

    pub(super) async fn wait_signaled(&self) -> Result<ExitStatus, ExecError> {
        match *self {}
    }

    pub(super) async fn wait_killed(&self, _grace: Duration) -> Result<ExitStatus, ExecError> {
        match *self {}
    }

    pub(super) fn signal(&self, _signal: Signal) {
        match *self {}
    }
}

/// Never: there is no server to lose.
pub(super) fn lost(_e: &io::Error) -> bool {
    false
}
