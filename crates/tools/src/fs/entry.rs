//! What the file layer hands around, the same on every platform: a name in
//! a directory held open, and what is there. The calls on an [`Entry`] are
//! the platform's (`at.rs`, `at_windows.rs`).

use super::at::Dir;
use std::ffi::OsString;
use std::fs::Permissions;

/// What an entry is, not following a symlink.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Kind {
    Missing,
    Directory,
    Symlink,
    /// A regular file, with its permissions.
    File(Permissions),
    /// Anything else, in words (a FIFO, a device, a socket).
    Other(&'static str),
}

/// A name in a directory held open.
#[derive(Debug, Clone)]
pub(crate) struct Entry {
    pub(crate) dir: Dir,
    pub(crate) name: OsString,
}

impl Entry {
    pub(crate) fn new(dir: Dir, name: impl Into<OsString>) -> Self {
        Entry {
            dir,
            name: name.into(),
        }
    }

    /// Another name in the same directory.
    pub(crate) fn sibling(&self, name: impl Into<OsString>) -> Entry {
        Entry::new(self.dir.clone(), name)
    }
}
