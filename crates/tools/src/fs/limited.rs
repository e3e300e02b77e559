//! Reading files someone else named (the model, a repository, a task
//! file): opening never blocks, only regular files are read, and never
//! more than a limit.
//!
//! Every file is opened with `O_NONBLOCK | O_NOCTTY | O_CLOEXEC` (on
//! Unix) and checked with `fstat` on the descriptor opened, so a FIFO (whose `open`
//! would wait for a writer), a terminal, a device such as `/dev/zero` or a
//! socket is refused with an error saying what it is, and the file checked
//! is the file read. Reads stop one byte past the limit.

use super::at;
use std::fs::{File, Metadata};
use std::io::{self, Read};
use std::path::{Path, PathBuf};

/// The limit of files that configure or instruct cogni: config files,
/// task files and the files they name, agent cards, commands, skills,
/// SOUL.md, AGENTS.md, schemas, instructions files.
pub const SPEC_FILE_MAX_BYTES: u64 = 16 * 1024 * 1024;

/// The limit of a script for the scripted provider (`--script`): recorded
/// sessions hold whole tool outputs.
pub const SCRIPT_MAX_BYTES: u64 = 256 * 1024 * 1024;

/// Why a file could not be read.
#[derive(Debug, thiserror::Error)]
pub enum ReadLimitError {
    /// Opening or reading the file failed (missing, no permission, ...).
    #[error("cannot read {}: {source}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// The OS error.
        source: io::Error,
    },
    /// The path is not a regular file (a directory, a FIFO, a device, ...).
    #[error("{} is {kind}, not a regular file", path.display())]
    NotRegular {
        /// The path.
        path: PathBuf,
        /// What it is instead (`a directory`, `a FIFO (named pipe)`, ...).
        kind: &'static str,
    },
    /// The file is larger than the reader's limit.
    #[error("{} is larger than the limit of {limit} bytes{}", path.display(), raise(setting))]
    TooLarge {
        /// The file.
        path: PathBuf,
        /// The limit, in bytes.
        limit: u64,
        /// The setting that raises the limit, where there is one.
        setting: Option<&'static str>,
    },
    /// The file is not UTF-8 text.
    #[error("{} is not UTF-8 text", path.display())]
    NotUtf8 {
        /// The file.
        path: PathBuf,
    },
}

fn raise(setting: &Option<&'static str>) -> String {
    setting.map_or_else(String::new, |s| format!(" (raise it with `{s}`)"))
}

impl ReadLimitError {
    /// The same error, naming `setting` as what raises the limit.
    pub fn raised_by(self, setting: &'static str) -> Self {
        match self {
            ReadLimitError::TooLarge { path, limit, .. } => ReadLimitError::TooLarge {
                path,
                limit,
                setting: Some(setting),
            },
            other => other,
        }
    }

    /// Nothing is at the path (for readers to which that is normal).
    pub fn is_missing(&self) -> bool {
        matches!(self, ReadLimitError::Io { source, .. } if source.kind() == io::ErrorKind::NotFound)
    }

    /// The path is a directory.
    pub fn is_directory(&self) -> bool {
        matches!(self, ReadLimitError::NotRegular { kind, .. } if *kind == super::DIRECTORY)
    }
}

/// The start of a file: at most the limit asked for, and whether more
/// followed.
#[derive(Debug)]
pub struct Head {
    /// The bytes read, at most the limit.
    pub bytes: Vec<u8>,
    /// True when the file had more bytes than the limit.
    pub cut: bool,
}

impl Head {
    /// The bytes as text, a character cut in two at the end (by the
    /// limit) dropped; `None` when they are not UTF-8.
    pub fn into_text(mut self) -> Option<String> {
        if self.cut {
            while std::str::from_utf8(&self.bytes).is_err_and(|e| e.error_len().is_none()) {
                self.bytes.pop();
            }
        }
        String::from_utf8(self.bytes).ok()
    }
}

/// Open the regular file at `path` (symlinks followed) for reading,
/// without blocking; anything else is refused, naming what it is.
pub fn open_regular(path: &Path) -> Result<(File, Metadata), ReadLimitError> {
    let file = at::open_path(path).map_err(|source| ReadLimitError::Io {
        path: path.to_path_buf(),
        source,
    })?;
    regular(file, path)
}

/// `file` (opened as `path`) when it is a regular file, with its metadata.
pub(crate) fn regular(file: File, path: &Path) -> Result<(File, Metadata), ReadLimitError> {
    let meta = file.metadata().map_err(|source| ReadLimitError::Io {
        path: path.to_path_buf(),
        source,
    })?;
    if !meta.is_file() {
        return Err(ReadLimitError::NotRegular {
            path: path.to_path_buf(),
            kind: at::type_name(meta.file_type()),
        });
    }
    Ok((file, meta))
}

/// At most `limit` bytes of `file` (opened as `path`).
pub(crate) fn head_of(file: File, path: &Path, limit: u64) -> Result<Head, ReadLimitError> {
    let mut bytes = Vec::new();
    file.take(limit.saturating_add(1))
        .read_to_end(&mut bytes)
        .map_err(|source| ReadLimitError::Io {
            path: path.to_path_buf(),
            source,
        })?;
    let cut = bytes.len() as u64 > limit;
    bytes.truncate(limit as usize);
    Ok(Head { bytes, cut })
}

/// All of `file` (opened as `path`) when it holds at most `limit` bytes.
pub(crate) fn all_of(file: File, path: &Path, limit: u64) -> Result<Vec<u8>, ReadLimitError> {
    let head = head_of(file, path, limit)?;
    if head.cut {
        return Err(ReadLimitError::TooLarge {
            path: path.to_path_buf(),
            limit,
            setting: None,
        });
    }
    Ok(head.bytes)
}

/// `bytes` (read from `path`) as text.
pub(crate) fn text_of(bytes: Vec<u8>, path: &Path) -> Result<String, ReadLimitError> {
    String::from_utf8(bytes).map_err(|_| ReadLimitError::NotUtf8 {
        path: path.to_path_buf(),
    })
}

/// The first `limit` bytes of the regular file at `path`, for readers that
/// cut a long file instead of refusing it. Blocking.
pub fn read_head(path: &Path, limit: u64) -> Result<Head, ReadLimitError> {
    let (file, _) = open_regular(path)?;
    head_of(file, path, limit)
}

/// The regular file at `path`, refused when it is larger than `limit`
/// bytes. Blocking.
pub fn read_limited(path: &Path, limit: u64) -> Result<Vec<u8>, ReadLimitError> {
    let (file, _) = open_regular(path)?;
    all_of(file, path, limit)
}

/// The regular file at `path` as text, refused when it is larger than
/// `limit` bytes. Blocking.
pub fn read_text_limited(path: &Path, limit: u64) -> Result<String, ReadLimitError> {
    text_of(read_limited(path, limit)?, path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_regular_files_within_the_limit_are_read() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("f");
        std::fs::write(&file, "hello").unwrap();
        assert_eq!(read_text_limited(&file, 5).unwrap(), "hello");
        let e = read_text_limited(&file, 4).unwrap_err();
        assert_eq!(
            e.to_string(),
            format!("{} is larger than the limit of 4 bytes", file.display())
        );
        let e = e.raised_by("project_doc_max_bytes").to_string();
        assert!(
            e.ends_with("(raise it with `project_doc_max_bytes`)"),
            "{e}"
        );
        let head = read_head(&file, 2).unwrap();
        assert_eq!((head.bytes.as_slice(), head.cut), (&b"he"[..], true));

        let e = read_text_limited(dir.path(), 5).unwrap_err();
        assert!(e.is_directory(), "{e}");
        let e = read_text_limited(&dir.path().join("none"), 5).unwrap_err();
        assert!(e.is_missing(), "{e}");
        std::fs::write(&file, b"\xff").unwrap();
        assert!(matches!(
            read_text_limited(&file, 5),
            Err(ReadLimitError::NotUtf8 { .. })
        ));
    }

    #[test]
    #[cfg(unix)]
    fn fifos_and_devices_are_refused_without_blocking() {
        use std::os::unix::ffi::OsStrExt;
        use std::time::{Duration, Instant};
        let dir = tempfile::tempdir().unwrap();
        let started = Instant::now();
        let fifo = dir.path().join("fifo");
        let c = std::ffi::CString::new(fifo.as_os_str().as_bytes()).unwrap();
        // SAFETY: a valid C string.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        let e = read_text_limited(&fifo, 5).unwrap_err().to_string();
        assert!(
            e.contains("is a FIFO (named pipe), not a regular file"),
            "{e}"
        );
        let e = read_text_limited(Path::new("/dev/zero"), 5).unwrap_err();
        assert!(e.to_string().contains("character device"), "{e}");
        assert!(started.elapsed() < Duration::from_secs(5));
    }
}
