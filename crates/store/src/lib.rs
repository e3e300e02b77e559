//! Sessions on disk: one append-only JSONL file per session under
//! `$COGNI_HOME/sessions/`, and resuming from it.
//!
//! The first line is a header (`{"type":"session",...}`); each further line
//! is one record: a history item appended (`item`), history replaced as a
//! whole by compaction or the context stack (`replace`), or a turn's token
//! usage (`usage`). Lines are written as they happen, one `write` each, so
//! a killed process loses at most the line it was writing. Files are
//! created with mode 0600, and every text in a line (messages, call
//! arguments, outputs, reasoning) goes through the front door's
//! [`Redactor`] (secrets out) before the line is encoded.
//!
//! While a process has a session open for writing it holds an exclusive
//! `flock` on the file: a second process is told the session is in use (it
//! may fork it instead). The lock goes away with the process, also on
//! kill -9.
//!
//! Loading is forgiving where a crash explains the damage and strict
//! otherwise: a torn last line is skipped with a warning (and cut off
//! before anything new is appended), a corrupted line in the middle is
//! skipped with a warning, a call without an output gets an "interrupted"
//! output; an empty file or one without a valid header is an error.
//!
//! This layer imports only `protocol`.

#![deny(missing_docs)]

use cogni_protocol::{
    Content, HistoryItem, HistoryObserver, Image, Role, ToolOutput, TurnCheckpoint, Usage,
};
use serde::{Deserialize, Serialize};
use std::collections::{HashMap, HashSet};
use std::fs::{File, OpenOptions};
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

/// Takes secrets out of a text before it is encoded into a line (the
/// front door provides it: known key shapes, the provider's key). It sees
/// the text as it is, so a secret at the start of a line is still at the
/// start of a line, not after an escaped `\n`.
pub type Redactor = Arc<dyn Fn(&str) -> String + Send + Sync>;

const VERSION: u32 = 1;

/// The output given on resume to a call that never got one.
pub const INTERRUPTED_OUTPUT: &str =
    "Interrupted: the session ended before this call finished; its result is unknown.";

/// Why a session could not be found, read, resumed or saved.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// No session file has this id (or id prefix).
    #[error("no saved session matches `{0}` (see `cogni sessions`)")]
    NotFound(String),
    /// The id prefix (first field) matches several sessions (second field:
    /// their ids, comma-separated).
    #[error("`{0}` matches several sessions: {1}; give more of the id")]
    Ambiguous(String, String),
    /// The sessions directory (the field) holds no session to resume.
    #[error("no saved sessions in {0}")]
    NoSessions(PathBuf),
    /// Another cogni process holds the session file's lock (the field is
    /// the session id).
    #[error("session {0} is in use by another cogni process; wait for it to end, or pass --fork to continue in a copy")]
    InUse(String),
    /// The file is not a session file cogni can read (bad header, not
    /// UTF-8, a format version this cogni does not read).
    #[error("{path}: {message}")]
    Invalid {
        /// The session file.
        path: PathBuf,
        /// What is wrong with it.
        message: String,
    },
    /// Reading or writing the sessions directory or a session file failed.
    #[error(
        "cannot save the session in {path}: {source} (pass --no-persist to run without saving)"
    )]
    Io {
        /// The file or directory in question.
        path: PathBuf,
        /// The OS error.
        #[source]
        source: io::Error,
    },
}

fn io_error(path: &Path) -> impl FnOnce(io::Error) -> StoreError + '_ {
    move |source| StoreError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// The first line of a session file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Header {
    /// The file format's version (1); files of any other version are refused.
    pub version: u32,
    /// The session's id, also the file's name (`ID.jsonl`).
    pub id: String,
    /// Seconds since the Unix epoch.
    pub started_at: u64,
    /// The working directory the session ran in.
    pub cwd: PathBuf,
    /// The model at the start of the session.
    pub model: String,
    /// The provider's name in config at the start of the session.
    pub provider: String,
    /// For a session resumed with `--fork`: the id of the session it was
    /// copied from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub forked_from: Option<String>,
}

impl Header {
    /// The header of a new session (current version, not forked);
    /// `started_at` is seconds since the Unix epoch.
    pub fn new(id: &str, started_at: u64, cwd: &Path, model: &str, provider: &str) -> Self {
        Header {
            version: VERSION,
            id: id.to_string(),
            started_at,
            cwd: cwd.to_path_buf(),
            model: model.to_string(),
            provider: provider.to_string(),
            forked_from: None,
        }
    }
}

/// A line as read.
#[derive(Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum Record {
    Session(Header),
    Item { item: HistoryItem },
    Replace { items: Vec<HistoryItem> },
    Usage { usage: Usage },
    Checkpoint { checkpoint: TurnCheckpoint },
    Rewind { turn: u32 },
    Image(ImageBytes),
}

/// An image's bytes, kept once per session file (the items that show
/// the image name it by hash).
#[derive(Serialize, Deserialize)]
struct ImageBytes {
    hash: String,
    media_type: String,
    /// base64
    data: String,
}

/// A line as written (borrowing, so nothing is copied).
#[derive(Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum RecordRef<'a> {
    Session(&'a Header),
    Item {
        item: &'a HistoryItem,
    },
    Replace {
        items: &'a [HistoryItem],
    },
    Usage {
        usage: &'a Usage,
    },
    Checkpoint {
        checkpoint: &'a TurnCheckpoint,
    },
    Rewind {
        turn: u32,
    },
    Image {
        hash: &'a str,
        media_type: &'a str,
        data: &'a str,
    },
}

/// A session read back from disk.
#[derive(Debug, Clone)]
pub struct Loaded {
    /// The file's first line.
    pub header: Header,
    /// Repaired: every call has exactly one output.
    pub history: Vec<HistoryItem>,
    /// Tokens of all turns.
    pub usage: Usage,
    /// The checkpoints of its turns that were not taken back, oldest
    /// first (with checkpoints on).
    pub checkpoints: Vec<TurnCheckpoint>,
    /// What was skipped or repaired, for the user.
    pub warnings: Vec<String>,
    /// Bytes up to the end of the last complete line.
    valid_len: u64,
    /// History was repaired (a call got an "interrupted" output, a stray
    /// output was dropped, a line was skipped).
    repaired: bool,
}

/// One line of `cogni sessions`.
#[derive(Debug, Clone)]
pub struct Summary {
    /// The session's id.
    pub id: String,
    /// When it started, seconds since the Unix epoch.
    pub started_at: u64,
    /// The directory it ran in.
    pub cwd: PathBuf,
    /// The text of the first user message that is not tagged (not
    /// instructions or environment); empty when there is none.
    pub first_prompt: String,
    /// Input plus output tokens of all its turns.
    pub tokens: u64,
    /// When it was last written, seconds since the Unix epoch.
    pub updated_at: u64,
    /// The session file's size in bytes.
    pub bytes: u64,
}

/// The sessions directory.
#[derive(Debug, Clone)]
pub struct Store {
    dir: PathBuf,
}

impl Store {
    /// The store under `$COGNI_HOME` (`home`).
    pub fn new(home: &Path) -> Self {
        Store {
            dir: home.join("sessions"),
        }
    }

    /// The sessions directory, `$COGNI_HOME/sessions`.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    fn path(&self, id: &str) -> PathBuf {
        self.dir.join(format!("{id}.jsonl"))
    }

    /// Start a new session file holding `header` and `history`.
    pub fn create(
        &self,
        header: &Header,
        history: &[HistoryItem],
        redact: Redactor,
    ) -> Result<SessionFile, StoreError> {
        create_private_dir(&self.dir).map_err(io_error(&self.dir))?;
        let path = self.path(&header.id);
        let mut options = OpenOptions::new();
        options.append(true).create_new(true);
        // Private to the user (on Windows the profile directory's ACL is).
        #[cfg(unix)]
        std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
        let file = options.open(&path).map_err(io_error(&path))?;
        lock(&file, &path, &header.id)?;
        let session = SessionFile::new(file, path, 0, redact, HashSet::new());
        session.write(&RecordRef::Session(header))?;
        for item in history {
            session.write(&RecordRef::Item { item })?;
        }
        Ok(session)
    }

    /// The id of the session `query` names: a whole id or a unique prefix.
    pub fn resolve(&self, query: &str) -> Result<String, StoreError> {
        if self.path(query).is_file() {
            return Ok(query.to_string());
        }
        let matches: Vec<String> = self
            .ids()?
            .into_iter()
            .filter(|id| id.starts_with(query))
            .collect();
        match matches.as_slice() {
            [one] => Ok(one.clone()),
            [] => Err(StoreError::NotFound(query.to_string())),
            many => Err(StoreError::Ambiguous(query.to_string(), many.join(", "))),
        }
    }

    /// The id of the session written to most recently.
    pub fn last(&self) -> Result<String, StoreError> {
        let mut newest: Option<(std::time::SystemTime, String)> = None;
        for id in self.ids()? {
            let modified = std::fs::metadata(self.path(&id))
                .and_then(|m| m.modified())
                .map_err(io_error(&self.dir))?;
            if newest.as_ref().is_none_or(|(t, _)| modified > *t) {
                newest = Some((modified, id));
            }
        }
        newest
            .map(|(_, id)| id)
            .ok_or_else(|| StoreError::NoSessions(self.dir.clone()))
    }

    fn ids(&self) -> Result<Vec<String>, StoreError> {
        let entries = match std::fs::read_dir(&self.dir) {
            Ok(entries) => entries,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(io_error(&self.dir)(e)),
        };
        Ok(entries
            .filter_map(|e| e.ok())
            .filter_map(|e| {
                e.file_name()
                    .to_str()
                    .and_then(|n| n.strip_suffix(".jsonl"))
                    .map(String::from)
            })
            .collect())
    }

    /// The header of a session, reading only its first line.
    pub fn header(&self, id: &str) -> Result<Header, StoreError> {
        use std::io::BufRead;
        let path = self.path(id);
        let mut first = String::new();
        File::open(&path)
            .and_then(|f| io::BufReader::new(f).read_line(&mut first))
            .map_err(|e| match e.kind() {
                io::ErrorKind::NotFound => StoreError::NotFound(id.to_string()),
                _ => io_error(&path)(e),
            })?;
        parse_header(&first).map_err(|message| StoreError::Invalid { path, message })
    }

    /// Read a session without opening it for writing.
    pub fn load(&self, id: &str) -> Result<Loaded, StoreError> {
        let path = self.path(id);
        let mut text = String::new();
        File::open(&path)
            .and_then(|mut f| f.read_to_string(&mut text))
            .map_err(|e| match e.kind() {
                io::ErrorKind::NotFound => StoreError::NotFound(id.to_string()),
                io::ErrorKind::InvalidData => StoreError::Invalid {
                    path: path.clone(),
                    message: "not a cogni session file (not UTF-8 text)".into(),
                },
                _ => io_error(&path)(e),
            })?;
        parse(&text).map_err(|message| StoreError::Invalid { path, message })
    }

    /// Open a saved session to continue it: its history, and the file to
    /// append to (locked). With `fork`, the history continues in a new
    /// session file (`new_id`) and the original is left alone, so a
    /// session in use elsewhere can still be continued.
    pub fn open(
        &self,
        id: &str,
        fork: Option<(&str, u64)>,
        redact: Redactor,
    ) -> Result<(Loaded, SessionFile), StoreError> {
        if let Some((new_id, started_at)) = fork {
            let mut loaded = self.load(id)?;
            let mut header = loaded.header.clone();
            header.id = new_id.to_string();
            header.started_at = started_at;
            header.forked_from = Some(loaded.header.id.clone());
            let file = self.create(&header, &loaded.history, redact)?;
            loaded.header = header;
            return Ok((loaded, file));
        }
        let path = self.path(id);
        let file = OpenOptions::new()
            .read(true)
            .append(true)
            .open(&path)
            .map_err(|e| match e.kind() {
                io::ErrorKind::NotFound => StoreError::NotFound(id.to_string()),
                _ => io_error(&path)(e),
            })?;
        lock(&file, &path, id)?;
        // Read under the lock, so no writer is mid-line.
        let loaded = self.load(id)?;
        let len = file.metadata().map_err(io_error(&path))?.len();
        if len != loaded.valid_len {
            // Cut the torn line so new lines start on a line of their own.
            file.set_len(loaded.valid_len).map_err(io_error(&path))?;
        }
        let images = images_of(&loaded.history)
            .into_iter()
            .map(|image| image.hash.clone())
            .collect();
        let session = SessionFile::new(file, path, loaded.valid_len, redact, images);
        if loaded.repaired {
            session.write(&RecordRef::Replace {
                items: &loaded.history,
            })?;
        }
        Ok((loaded, session))
    }

    /// Every readable session, newest first; unreadable files are skipped.
    pub fn list(&self) -> Result<Vec<Summary>, StoreError> {
        let mut out: Vec<Summary> = self
            .ids()?
            .iter()
            .filter_map(|id| {
                let meta = std::fs::metadata(self.path(id)).ok()?;
                Some((self.load(id).ok()?, meta))
            })
            .map(|(l, meta)| Summary {
                first_prompt: l
                    .history
                    .iter()
                    .find(|i| i.role == Role::User && i.tag().is_none())
                    .and_then(|i| i.as_text())
                    .unwrap_or("")
                    .to_string(),
                id: l.header.id,
                started_at: l.header.started_at,
                cwd: l.header.cwd,
                tokens: l.usage.total(),
                updated_at: meta
                    .modified()
                    .ok()
                    .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
                    .map_or(l.header.started_at, |d| d.as_secs()),
                bytes: meta.len(),
            })
            .collect();
        out.sort_by(|a, b| b.started_at.cmp(&a.started_at).then(b.id.cmp(&a.id)));
        Ok(out)
    }
}

fn create_private_dir(dir: &Path) -> io::Result<()> {
    let mut builder = std::fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
    match builder.create(dir) {
        Ok(()) if dir.is_dir() => Ok(()),
        Ok(()) => Err(io::Error::new(
            io::ErrorKind::AlreadyExists,
            "exists and is not a directory",
        )),
        Err(e) => Err(e),
    }
}

/// Take the session's exclusive lock, or say it is in use.
/// (`flock` on Unix, `LockFileEx` on Windows: the lock goes with the
/// process, so a crashed cogni leaves none behind.)
fn lock(file: &File, path: &Path, id: &str) -> Result<(), StoreError> {
    match file.try_lock() {
        Ok(()) => Ok(()),
        Err(std::fs::TryLockError::WouldBlock) => Err(StoreError::InUse(id.to_string())),
        Err(std::fs::TryLockError::Error(err)) => Err(io_error(path)(err)),
    }
}

fn parse_header(line: &str) -> Result<Header, String> {
    if line.trim().is_empty() {
        return Err("the session file is empty".into());
    }
    match serde_json::from_str::<Record>(line.trim_end()) {
        Ok(Record::Session(h)) if h.version == VERSION => Ok(h),
        Ok(Record::Session(h)) => Err(format!(
            "session file version {} is not supported (this cogni reads version {VERSION})",
            h.version
        )),
        _ => Err("not a cogni session file (the first line is not a session header)".into()),
    }
}

/// Parse a whole file: the header, then records replayed in order.
fn parse(text: &str) -> Result<Loaded, String> {
    if text.trim().is_empty() {
        return Err("the session file is empty".into());
    }
    let mut lines = text.split_inclusive('\n');
    let first = lines.next().unwrap_or_default();
    let header = parse_header(first)?;
    let mut loaded = Loaded {
        header,
        history: Vec::new(),
        usage: Usage::default(),
        checkpoints: Vec::new(),
        warnings: Vec::new(),
        valid_len: first.len() as u64,
        repaired: false,
    };
    if !first.ends_with('\n') {
        return Err("not a cogni session file (the header line is incomplete)".into());
    }
    let mut number = 1;
    let mut images: HashMap<String, Arc<str>> = HashMap::new();
    for line in lines {
        number += 1;
        let complete = line.ends_with('\n');
        let record = serde_json::from_str::<Record>(line.trim_end());
        match record {
            Ok(record) if complete => {
                loaded.valid_len += line.len() as u64;
                match record {
                    Record::Item { item } => loaded.history.push(item),
                    Record::Replace { items } => {
                        let kept = cogni_protocol::unchanged_prefix(&loaded.history, &items);
                        for checkpoint in &mut loaded.checkpoints {
                            checkpoint.history_replaced(kept);
                        }
                        loaded.history = items;
                    }
                    Record::Usage { usage } => loaded.usage.add(&usage),
                    Record::Checkpoint { checkpoint } => {
                        // The snapshot after a turn completes its record.
                        loaded.checkpoints.retain(|c| c.turn < checkpoint.turn);
                        loaded.checkpoints.push(checkpoint);
                    }
                    Record::Rewind { turn } => loaded.checkpoints.retain(|c| c.turn < turn),
                    Record::Image(image) => {
                        images.insert(image.hash, Arc::from(image.data));
                    }
                    Record::Session(_) => {
                        loaded.repaired = true;
                        loaded
                            .warnings
                            .push(format!("line {number}: a second header, skipped"));
                    }
                }
            }
            _ if !complete => {
                loaded.warnings.push(format!(
                    "line {number}: the last line was cut off (the session ended while writing it); skipped"
                ));
            }
            _ => {
                loaded.valid_len += line.len() as u64;
                loaded.repaired = true;
                loaded
                    .warnings
                    .push(format!("line {number}: not a valid record; skipped"));
            }
        }
    }
    if fill_images(&mut loaded.history, &images) {
        loaded.repaired = true;
        loaded
            .warnings
            .push("images whose bytes were not in the file became notes".into());
    }
    if repair(&mut loaded.history) {
        loaded.repaired = true;
        loaded.warnings.push(
            "calls that never finished got an \"interrupted\" output; outputs without a call were dropped"
                .into(),
        );
    }
    Ok(loaded)
}

/// Give every image of `history` its bytes from `images` (by hash); an
/// image whose bytes are not there becomes a note. Whether one did.
fn fill_images(history: &mut [HistoryItem], images: &HashMap<String, Arc<str>>) -> bool {
    let mut missing = false;
    let note = |image: &Image| format!("[image {} is no longer available]", image.describe());
    for item in history.iter_mut() {
        match &mut item.content {
            Content::Image(image) => match images.get(&image.hash) {
                Some(data) => image.data = data.clone(),
                None => {
                    missing = true;
                    let text = note(image);
                    item.content = Content::Text { text, tag: None };
                }
            },
            Content::ToolOutput(output) => {
                let mut notes = String::new();
                output
                    .images
                    .retain_mut(|image| match images.get(&image.hash) {
                        Some(data) => {
                            image.data = data.clone();
                            true
                        }
                        None => {
                            notes.push('\n');
                            notes.push_str(&note(image));
                            false
                        }
                    });
                if !notes.is_empty() {
                    missing = true;
                    output.content.push_str(&notes);
                }
            }
            _ => {}
        }
    }
    missing
}

/// The images `items` show, each once.
fn images_of(items: &[HistoryItem]) -> Vec<&Image> {
    let mut seen = HashSet::new();
    items
        .iter()
        .flat_map(|item| match &item.content {
            Content::Image(image) => std::slice::from_ref(image),
            Content::ToolOutput(output) => output.images.as_slice(),
            _ => &[],
        })
        .filter(|image| !image.is_missing() && seen.insert(image.hash.as_str()))
        .collect()
}

/// Make every call have exactly one output: a missing one becomes
/// "interrupted" (placed after the calls and outputs around the call), a
/// stray or repeated output is dropped. Returns whether anything changed.
fn repair(history: &mut Vec<HistoryItem>) -> bool {
    use std::collections::HashSet;
    let calls: HashSet<String> = history
        .iter()
        .filter_map(|i| match &i.content {
            Content::ToolCall(c) => Some(c.id.clone()),
            _ => None,
        })
        .collect();
    let before = history.len();
    let mut answered = HashSet::new();
    history.retain(|i| match &i.content {
        Content::ToolOutput(o) => calls.contains(&o.call_id) && answered.insert(o.call_id.clone()),
        _ => true,
    });
    let mut changed = history.len() != before;
    let mut i = 0;
    while i < history.len() {
        let missing = match &history[i].content {
            Content::ToolCall(c) if !answered.contains(&c.id) => Some(c.id.clone()),
            _ => None,
        };
        if let Some(call_id) = missing {
            let mut at = i + 1;
            while at < history.len()
                && matches!(
                    history[at].content,
                    Content::ToolCall(_) | Content::ToolOutput(_)
                )
            {
                at += 1;
            }
            history.insert(
                at,
                HistoryItem::tool_output(ToolOutput {
                    call_id: call_id.clone(),
                    content: INTERRUPTED_OUTPUT.into(),
                    is_error: true,
                    command: None,
                    images: Vec::new(),
                }),
            );
            answered.insert(call_id);
            changed = true;
        }
        i += 1;
    }
    changed
}

/// An open session file: appends records, one line each. Implements
/// [`HistoryObserver`] so the engine's history reaches it as it changes.
///
/// Writes never panic and never stop the session: the first failure (a
/// full disk, a file system gone read-only) cuts the file back to its last
/// complete line, stops further writes and is kept for the front door to
/// report ([`SessionFile::failure`]).
pub struct SessionFile {
    path: PathBuf,
    state: Mutex<FileState>,
    redact: Redactor,
}

struct FileState {
    file: File,
    /// Bytes of complete lines.
    len: u64,
    failure: Option<String>,
    /// The hashes of the images whose bytes the file holds.
    images: HashSet<String>,
}

impl SessionFile {
    fn new(file: File, path: PathBuf, len: u64, redact: Redactor, images: HashSet<String>) -> Self {
        SessionFile {
            path,
            state: Mutex::new(FileState {
                file,
                len,
                failure: None,
                images,
            }),
            redact,
        }
    }

    /// The session file being written.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Record a turn's token usage.
    pub fn record_usage(&self, usage: &Usage) {
        let _ = self.write(&RecordRef::Usage { usage });
    }

    /// Why saving stopped, once it has.
    pub fn failure(&self) -> Option<String> {
        self.state.lock().ok().and_then(|s| s.failure.clone())
    }

    /// The record as one line, its texts redacted before encoding.
    fn encode(&self, record: &RecordRef<'_>) -> serde_json::Result<String> {
        let redact = |text: &str| (self.redact)(text);
        match record {
            RecordRef::Item { item } => serde_json::to_string(&RecordRef::Item {
                item: &item.map_text(&redact),
            }),
            RecordRef::Replace { items } => {
                let items: Vec<HistoryItem> = items.iter().map(|i| i.map_text(&redact)).collect();
                serde_json::to_string(&RecordRef::Replace { items: &items })
            }
            RecordRef::Checkpoint { checkpoint } => {
                let mut checkpoint = (*checkpoint).clone();
                checkpoint.prompt = redact(&checkpoint.prompt);
                serde_json::to_string(&RecordRef::Checkpoint {
                    checkpoint: &checkpoint,
                })
            }
            // The header, usage and rewinds hold no free text; an image's
            // bytes are kept as they are.
            RecordRef::Session(_)
            | RecordRef::Usage { .. }
            | RecordRef::Rewind { .. }
            | RecordRef::Image { .. } => serde_json::to_string(record),
        }
    }

    fn write(&self, record: &RecordRef<'_>) -> Result<(), StoreError> {
        let Ok(mut state) = self.state.lock() else {
            return Ok(());
        };
        if state.failure.is_some() {
            return Ok(());
        }
        // The bytes of images the file does not hold yet go first, once.
        let items = match record {
            RecordRef::Item { item } => std::slice::from_ref(*item),
            RecordRef::Replace { items } => items,
            _ => &[],
        };
        for image in images_of(items) {
            if state.images.contains(&image.hash) {
                continue;
            }
            let bytes = RecordRef::Image {
                hash: &image.hash,
                media_type: &image.media_type,
                data: &image.data,
            };
            self.write_line(&mut state, &bytes)?;
            state.images.insert(image.hash.clone());
        }
        self.write_line(&mut state, record)
    }

    fn write_line(&self, state: &mut FileState, record: &RecordRef<'_>) -> Result<(), StoreError> {
        let mut line = self.encode(record).map_err(|e| StoreError::Invalid {
            path: self.path.clone(),
            message: e.to_string(),
        })?;
        line.push('\n');
        match state.file.write_all(line.as_bytes()) {
            Ok(()) => {
                state.len += line.len() as u64;
                Ok(())
            }
            Err(source) => {
                // Leave the file as it was: no half-written line.
                let len = state.len;
                let _ = state.file.set_len(len);
                state.failure = Some(format!(
                    "cannot write the session file {}: {source}; the session is no longer saved (the file up to here is intact)",
                    self.path.display()
                ));
                Err(StoreError::Io {
                    path: self.path.clone(),
                    source,
                })
            }
        }
    }
}

impl HistoryObserver for SessionFile {
    fn appended(&self, items: &[HistoryItem]) {
        for item in items {
            if self.write(&RecordRef::Item { item }).is_err() {
                return;
            }
        }
    }

    fn replaced(&self, history: &[HistoryItem]) {
        let _ = self.write(&RecordRef::Replace { items: history });
    }

    fn transcript_path(&self) -> Option<&Path> {
        Some(&self.path)
    }

    fn checkpoint(&self, checkpoint: &TurnCheckpoint) {
        let _ = self.write(&RecordRef::Checkpoint { checkpoint });
    }

    fn rewound(&self, turn: u32) {
        let _ = self.write(&RecordRef::Rewind { turn });
    }
}

/// `started_at` as `YYYY-MM-DD HH:MM` (UTC).
pub fn format_time(secs: u64) -> String {
    let (date, (hours, minutes, _)) = cogni_protocol::utc_date_time(secs);
    format!("{date} {hours:02}:{minutes:02}")
}

#[cfg(test)]
mod tests;
