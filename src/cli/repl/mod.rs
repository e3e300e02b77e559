//! The interactive REPL.

use super::persist::Resume;
use super::ReplArgs;

pub fn run(args: ReplArgs, resume: Option<Resume>, fork: bool) -> u8 {
    let _ = (args, resume, fork);
    0
}
