//! Files an editor holds. A front door whose user works in an editor that
//! can read and write text files for cogni (an ACP client's `fs` methods,
//! which see unsaved buffers) hands the session an [`Editor`]; the file
//! tools (`read_file`, `write_file`, `edit_file`, `apply_patch`) then read
//! and write text through it instead of the disk. Paths are checked by the
//! same policy either way ([`super::paths`]); what an editor cannot do
//! (directories, deleting and moving files) stays on the disk.

use super::fs::{
    existing_permissions, read_text, remove_dirs, write_at, Kind, ReadTextError, Target, Written,
};
use std::fs::Permissions;
use std::io;
use std::path::Path;
use std::sync::Arc;

/// An editor's access to text files. Its methods block: the tools call
/// them on their blocking threads, never on the async runtime.
pub trait Editor: Send + Sync {
    /// Whether it reads files ([`Editor::read`]).
    fn reads(&self) -> bool;
    /// Whether it writes files ([`Editor::write`]).
    fn writes(&self) -> bool;
    /// The text of the file at `path` (absolute) as the editor has it.
    fn read(&self, path: &Path) -> io::Result<String>;
    /// Make `text` the file's content (creating the file).
    fn write(&self, path: &Path, text: &str) -> io::Result<()>;
}

/// Where the file tools read and write text: the disk, or an editor.
#[derive(Clone, Default)]
pub struct Files(Option<Arc<dyn Editor>>);

impl std::fmt::Debug for Files {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match &self.0 {
            Some(_) => "Files(editor)",
            None => "Files(disk)",
        })
    }
}

impl Files {
    /// Text through `editor` where it offers reading or writing.
    pub fn through(editor: Arc<dyn Editor>) -> Self {
        Files(Some(editor))
    }

    fn reader(&self) -> Option<&dyn Editor> {
        self.0.as_deref().filter(|e| e.reads())
    }

    fn writer(&self) -> Option<&dyn Editor> {
        self.0.as_deref().filter(|e| e.writes())
    }

    /// The editor's text of the file at `path`, when reads go through an
    /// editor.
    pub(crate) fn editor_text(&self, path: &Path) -> Option<io::Result<String>> {
        self.reader().map(|editor| editor.read(path))
    }

    /// Whether writes go through an editor.
    pub(crate) fn writes_through_editor(&self) -> bool {
        self.writer().is_some()
    }

    /// The text of the existing file of `target` and its permissions.
    /// Through an editor, the file must exist on disk too (a buffer never
    /// saved is not a file yet). Blocking.
    pub(crate) fn read_text(
        &self,
        target: &Target,
    ) -> Result<(String, Permissions), ReadTextError> {
        let Some(editor) = self.reader() else {
            return read_text(target);
        };
        let permissions = match target.kind()? {
            Kind::Directory => return Err(ReadTextError::Directory),
            Kind::Other(kind) => return Err(ReadTextError::NotRegular(kind)),
            Kind::Missing => return Err(io::Error::from(io::ErrorKind::NotFound).into()),
            Kind::File(permissions) => permissions,
            Kind::Symlink => return Err(ReadTextError::NotRegular("a symlink")),
        };
        Ok((editor.read(target.real())?, permissions))
    }

    /// Create or replace the file of `target` with `text`: atomically on
    /// disk, or through the editor (missing parent directories are made
    /// on disk first, and removed again when the write fails). Blocking.
    pub(crate) fn write_text(&self, target: &Target, text: &str) -> io::Result<Written> {
        let Some(editor) = self.writer() else {
            return write_at(target, text.as_bytes());
        };
        let existed = existing_permissions(target)?.is_some();
        let mut created = Vec::new();
        let written = target
            .make_parents(&mut created)
            .and_then(|_| editor.write(target.real(), text));
        if let Err(e) = written {
            remove_dirs(&created);
            return Err(e);
        }
        Ok(if existed {
            Written::Replaced
        } else {
            Written::Created
        })
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::fs::tests::target;
    use std::collections::HashMap;
    use std::fs;
    use std::path::PathBuf;
    use std::sync::Mutex;

    /// An editor holding buffers in memory: reads see them (the disk when
    /// a file has none), writes go to them only.
    #[derive(Default)]
    pub(crate) struct Buffers {
        pub(crate) open: Mutex<HashMap<PathBuf, String>>,
        pub(crate) read_only: bool,
    }

    impl Editor for Buffers {
        fn reads(&self) -> bool {
            true
        }
        fn writes(&self) -> bool {
            !self.read_only
        }
        fn read(&self, path: &Path) -> io::Result<String> {
            match self.open.lock().unwrap().get(path) {
                Some(text) => Ok(text.clone()),
                None => fs::read_to_string(path),
            }
        }
        fn write(&self, path: &Path, text: &str) -> io::Result<()> {
            self.open
                .lock()
                .unwrap()
                .insert(path.to_path_buf(), text.to_string());
            Ok(())
        }
    }

    #[test]
    fn reads_and_writes_go_through_the_editor() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a.txt");
        fs::write(&path, "on disk").unwrap();
        let buffers = Arc::new(Buffers::default());
        buffers
            .open
            .lock()
            .unwrap()
            .insert(path.clone(), "unsaved".into());
        let files = Files::through(buffers.clone());
        assert_eq!(files.read_text(&target(&path)).unwrap().0, "unsaved");
        assert_eq!(
            files.write_text(&target(&path), "new").unwrap(),
            Written::Replaced
        );
        let fresh = dir.path().join("d/e.txt");
        assert_eq!(
            files.write_text(&target(&fresh), "x").unwrap(),
            Written::Created
        );
        assert!(dir.path().join("d").is_dir(), "the parent is made on disk");
        assert_eq!(fs::read_to_string(&path).unwrap(), "on disk");
        assert_eq!(buffers.open.lock().unwrap()[&path], "new");
        assert!(matches!(
            files.read_text(&target(&dir.path().join("d"))),
            Err(ReadTextError::Directory)
        ));
        // An editor that only reads: writes go to the disk.
        let reader = Files::through(Arc::new(Buffers {
            read_only: true,
            ..Default::default()
        }));
        reader.write_text(&target(&path), "disk").unwrap();
        assert_eq!(fs::read_to_string(&path).unwrap(), "disk");
        assert!(!reader.writes_through_editor());
        assert!(format!("{:?}", Files::default()).contains("disk"));
    }
}
