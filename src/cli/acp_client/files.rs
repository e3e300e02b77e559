//! The agent's `fs/read_text_file` and `fs/write_text_file`, under the
//! rules of cogni's own file tools: a read opens only a regular file,
//! without blocking (a FIFO or a device is refused, not waited on), and
//! reads at most what an edit may hold; a write goes through the path
//! policy (`crate::tools::paths::WriteAccess`: refused under a read-only
//! sandbox, confined to the workspace's pinned roots under
//! workspace-write, never to a protected path or a pinned file) and
//! lands atomically. Paths must be absolute, as the protocol says.

use crate::protocol::SandboxPolicy;
use crate::sandbox::Workspace;
use crate::tools::fs::{read_text_limited, write_at, Written, EDIT_MAX_BYTES};
use crate::tools::paths::{FinalLink, WriteAccess};
use agent_client_protocol::v1::schema as acp;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// Where the agent may read and write, and whether it may write now.
pub struct Files {
    cwd: PathBuf,
    policy: SandboxPolicy,
    workspace: Arc<Workspace>,
    /// The turn was cancelled: no more writes until the next prompt.
    stopped: AtomicBool,
}

impl Files {
    /// The rules of a session working in `cwd` under `policy` (its
    /// workspace pinned now: blocking, a few `open` calls).
    pub fn new(cwd: PathBuf, policy: SandboxPolicy) -> Self {
        let workspace = Arc::new(Workspace::pin(&cwd, &policy.writable_roots));
        Files {
            cwd,
            policy,
            workspace,
            stopped: AtomicBool::new(false),
        }
    }

    /// The sandbox mode writes are checked under.
    pub fn mode(&self) -> crate::protocol::SandboxMode {
        self.policy.mode
    }

    /// Refuse writes from now on (the turn was cancelled).
    pub fn stop(&self) {
        self.stopped.store(true, Ordering::SeqCst);
    }

    /// Accept writes again (a new prompt).
    pub fn resume(&self) {
        self.stopped.store(false, Ordering::SeqCst);
    }

    /// The text of `request.path`, from line `line` (1-based) on, at most
    /// `limit` lines. Blocking.
    pub fn read(&self, request: &acp::ReadTextFileRequest) -> Result<String, String> {
        let path = absolute(&request.path)?;
        let text = read_text_limited(path, EDIT_MAX_BYTES).map_err(|e| e.to_string())?;
        let skip = request.line.map_or(0, |l| l.saturating_sub(1) as usize);
        let take = request.limit.map_or(usize::MAX, |l| l as usize);
        if skip == 0 && take == usize::MAX {
            return Ok(text);
        }
        Ok(text.split_inclusive('\n').skip(skip).take(take).collect())
    }

    /// Write `request.content` to `request.path` (atomically; missing
    /// parent directories are made), if the rules allow it. Blocking.
    pub fn write(&self, request: &acp::WriteTextFileRequest) -> Result<Written, String> {
        let path = absolute(&request.path)?;
        let shown = path.display();
        if self.stopped.load(Ordering::SeqCst) {
            return Err(format!(
                "cannot write {shown}: the turn was cancelled; nothing was changed"
            ));
        }
        let target = WriteAccess::new(&self.cwd, &self.policy, &self.workspace)
            .and_then(|access| access.resolve(path, FinalLink::Follow))
            .map_err(|e| format!("cannot write {shown}: {e}"))?;
        write_at(&target, request.content.as_bytes())
            .map_err(|e| format!("cannot write {shown}: {e}"))
    }
}

/// `path` if it is absolute (relative paths are not allowed by the
/// protocol, and would be ambiguous).
fn absolute(path: &Path) -> Result<&Path, String> {
    if path.is_absolute() {
        Ok(path)
    } else {
        Err(format!(
            "{}: not an absolute path (the protocol requires absolute paths)",
            path.display()
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::SandboxMode;

    fn files(dir: &Path, mode: SandboxMode) -> Files {
        let policy = SandboxPolicy {
            mode,
            ..SandboxPolicy::default()
        };
        Files::new(dir.to_path_buf(), policy)
    }

    fn write(files: &Files, path: &Path, text: &str) -> Result<Written, String> {
        files.write(&acp::WriteTextFileRequest::new("s", path, text))
    }

    #[test]
    fn writes_follow_the_sandboxs_rules() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().canonicalize().unwrap();
        let work = root.join("work");
        std::fs::create_dir_all(work.join(".git")).unwrap();
        let ws = files(&work, SandboxMode::WorkspaceWrite);

        assert_eq!(
            write(&ws, &work.join("a/b.txt"), "hi\n"),
            Ok(Written::Created)
        );
        assert_eq!(
            std::fs::read_to_string(work.join("a/b.txt")).unwrap(),
            "hi\n"
        );
        let outside = write(&ws, &root.join("out.txt"), "x").unwrap_err();
        assert!(outside.contains("outside the workspace"), "{outside}");
        let protected = write(&ws, &work.join(".git/config"), "x").unwrap_err();
        assert!(protected.contains("protected"), "{protected}");
        let relative = write(&ws, Path::new("c.txt"), "x").unwrap_err();
        assert!(relative.contains("absolute"), "{relative}");
        ws.stop();
        let stopped = write(&ws, &work.join("d.txt"), "x").unwrap_err();
        assert!(stopped.contains("cancelled"), "{stopped}");
        ws.resume();
        assert!(write(&ws, &work.join("d.txt"), "x").is_ok());

        let ro = files(&work, SandboxMode::ReadOnly);
        let refused = write(&ro, &work.join("e.txt"), "x").unwrap_err();
        assert!(refused.contains("read-only"), "{refused}");
        assert!(!work.join("e.txt").exists() && !root.join("out.txt").exists());
    }

    #[cfg(unix)]
    #[test]
    fn reads_take_regular_files_by_lines() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().canonicalize().unwrap();
        std::fs::write(dir.join("f.txt"), "one\ntwo\nthree\n").unwrap();
        let files = files(&dir, SandboxMode::ReadOnly);
        let read = |line, limit| {
            let request = acp::ReadTextFileRequest::new("s", dir.join("f.txt"))
                .line(line)
                .limit(limit);
            files.read(&request)
        };
        assert_eq!(read(None, None).unwrap(), "one\ntwo\nthree\n");
        assert_eq!(read(Some(2), Some(1)).unwrap(), "two\n");
        assert_eq!(read(Some(3), None).unwrap(), "three\n");
        let fifo = dir.join("fifo");
        let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
        // SAFETY: a valid C string.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        let refused = files
            .read(&acp::ReadTextFileRequest::new("s", &fifo))
            .unwrap_err();
        assert!(
            refused.contains("not a regular file") || refused.contains("FIFO"),
            "{refused}"
        );
    }
}
