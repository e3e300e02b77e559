//! `cogni import codex` and `cogni import claude` (docs/import.md): another
//! agent's settings as cogni.toml. The other agent's files are only read:
//! nothing they name is run, looked up or connected to.
//!
//! Each mapping (codex.rs, claude.rs) fills an [`Import`]: a cogni.toml
//! document, the settings that have no equivalent (each with its key and
//! why), and the ones carried over with a change worth knowing. Every
//! setting is checked by cogni's own config loader before it joins the
//! document, so one that cogni would refuse is reported with cogni's
//! reason instead of spoiling the file; the whole file is checked again
//! before it is printed or written.

mod claude;
mod claude_tools;
mod codex;
#[cfg(test)]
mod tests;

use super::exit;
use crate::config::{self, ConfigFile, Sources};
use clap::{Args, Subcommand};
use std::path::{Path, PathBuf};
use toml_edit::{Array, DocumentMut, InlineTable, Item, Table, Value};

#[derive(Debug, Args)]
pub struct ImportArgs {
    #[command(subcommand)]
    pub command: ImportCommand,
}

#[derive(Debug, Subcommand)]
pub enum ImportCommand {
    /// Codex CLI's config.toml ($CODEX_HOME/config.toml, default ~/.codex) as cogni.toml.
    Codex(codex::CodexArgs),
    /// Claude Code's settings as cogni.toml: yours (~/.claude), or a project's with --project.
    Claude(claude::ClaudeArgs),
}

/// Where the result goes; shared by both imports.
#[derive(Debug, Args)]
pub struct WriteArgs {
    /// Write the file instead of printing it: $COGNI_HOME/config.toml (with
    /// `--project DIR`: DIR/cogni.toml).
    #[arg(long)]
    pub write: bool,

    /// With --write: write this file instead.
    #[arg(long, value_name = "PATH", requires = "write")]
    pub to: Option<PathBuf>,

    /// With --write: replace the file when it exists.
    #[arg(long, requires = "write")]
    pub force: bool,
}

pub fn run(args: ImportArgs) -> u8 {
    let env = |key: &str| std::env::var(key).ok();
    let result = match args.command {
        ImportCommand::Codex(args) => codex::run(args, &env),
        ImportCommand::Claude(args) => claude::run(args, &env),
    };
    result.unwrap_or_else(|message| {
        eprintln!("cogni: {message}");
        exit::USAGE
    })
}

/// A setting as it reads in the report: its key in the other agent's file
/// and why it was not imported (or how it changed).
#[derive(Debug)]
pub(super) struct Entry {
    pub key: String,
    pub why: String,
}

/// What an import makes.
#[derive(Debug)]
pub(super) struct Import {
    /// What was imported, as cogni.toml.
    doc: DocumentMut,
    /// The files read, for the header.
    sources: Vec<PathBuf>,
    /// Said in the header, after the sources (where the file belongs).
    about: String,
    /// Settings with no cogni equivalent: not imported.
    pub skipped: Vec<Entry>,
    /// Settings imported with a change worth knowing.
    pub notes: Vec<Entry>,
}

impl Import {
    pub fn new(about: impl Into<String>) -> Self {
        Import {
            doc: DocumentMut::new(),
            sources: Vec::new(),
            about: about.into(),
            skipped: Vec::new(),
            notes: Vec::new(),
        }
    }

    /// Record a file that was read.
    pub fn source(&mut self, path: &Path) {
        self.sources.push(path.to_path_buf());
    }

    /// `key` was not imported, because `why`.
    pub fn skip(&mut self, key: impl Into<String>, why: impl Into<String>) {
        self.skipped.push(Entry {
            key: key.into(),
            why: why.into(),
        });
    }

    /// `key` was imported, with a change: `what`.
    pub fn note(&mut self, key: impl Into<String>, what: impl Into<String>) {
        self.notes.push(Entry {
            key: key.into(),
            why: what.into(),
        });
    }

    /// Whether the document holds the table or value at `path`.
    pub fn has(&self, path: &[&str]) -> bool {
        let mut item = self.doc.as_item();
        for part in path {
            match item.get(part) {
                Some(next) => item = next,
                None => return false,
            }
        }
        true
    }

    /// Set `path` (cogni's key path) to `item`, the import of `key`, when
    /// cogni accepts it on its own; otherwise `key` is skipped with
    /// cogni's reason. Returns whether it was set.
    pub fn set(&mut self, key: &str, path: &[&str], item: impl Into<Item>) -> bool {
        let item = item.into();
        self.admit(key, |doc| {
            let (last, parents) = path.split_last().expect("a key path");
            table_at(doc, parents).insert(last, item.clone());
        })
    }

    /// Add `table` to the array of tables at `path` (`[[hooks.Stop]]`).
    pub fn push_table(&mut self, key: &str, path: &[&str], table: Table) -> bool {
        self.admit(key, |doc| {
            let (last, parents) = path.split_last().expect("a key path");
            let parent = table_at(doc, parents);
            let tables = parent
                .entry(last)
                .or_insert_with(|| Item::ArrayOfTables(Default::default()));
            if let Some(tables) = tables.as_array_of_tables_mut() {
                tables.push(table.clone());
            }
        })
    }

    /// Add `value` to the array at `path` (`effects = [...]`), one entry
    /// a line.
    pub fn push_value(&mut self, key: &str, path: &[&str], value: impl Into<Value>) -> bool {
        let value = value.into();
        self.admit(key, |doc| {
            let (last, parents) = path.split_last().expect("a key path");
            let array = table_at(doc, parents)
                .entry(last)
                .or_insert_with(|| Item::Value(Value::Array(Array::new())));
            if let Some(array) = array.as_array_mut() {
                array.push_formatted(value.clone().decorated("\n  ", ""));
                array.set_trailing("\n");
                array.set_trailing_comma(true);
            }
        })
    }

    /// Apply `change` to the document when it is accepted on its own, in
    /// an empty document.
    fn admit(&mut self, key: &str, change: impl Fn(&mut DocumentMut)) -> bool {
        let mut alone = DocumentMut::new();
        change(&mut alone);
        match check(&alone.to_string()) {
            Ok(()) => {
                change(&mut self.doc);
                true
            }
            Err(why) => {
                self.skip(key, format!("cogni refuses it: {why}"));
                false
            }
        }
    }

    /// The cogni.toml text: a header naming the sources, the settings, and
    /// the report as comments.
    pub fn render(&self) -> String {
        let mut out = String::from("# cogni.toml made by `cogni import` from:\n");
        for source in &self.sources {
            out.push_str(&comment(&format!("  {}", source.display())));
        }
        out.push_str(&comment(&self.about));
        out.push('\n');
        out.push_str(&self.doc.to_string());
        for (title, entries) in [
            (
                "Not imported: these settings have no cogni equivalent.",
                &self.skipped,
            ),
            ("Imported with a change:", &self.notes),
        ] {
            if entries.is_empty() {
                continue;
            }
            out.push_str(&format!("\n# {title}\n"));
            for entry in entries {
                out.push_str(&comment(&format!("  {}: {}", entry.key, entry.why)));
            }
        }
        out
    }
}

/// `text` as one comment line: control characters (a newline in a key
/// of a hostile file, say) are escaped, so nothing it holds becomes a
/// setting.
fn comment(text: &str) -> String {
    let mut line = String::from("#");
    if !text.is_empty() {
        line.push(' ');
    }
    for c in text.chars() {
        if c.is_control() {
            line.extend(c.escape_default());
        } else {
            line.push(c);
        }
    }
    line.push('\n');
    line
}

/// The table at `path` in `doc`, created (implicit, so only the tables
/// that hold values get a header) where missing. A value in the way is
/// replaced by a table.
fn table_at<'a>(doc: &'a mut DocumentMut, path: &[&str]) -> &'a mut Table {
    let mut table = doc.as_table_mut();
    for part in path {
        let item = table.entry(part).or_insert_with(|| {
            let mut t = Table::new();
            t.set_implicit(true);
            Item::Table(t)
        });
        if !item.is_table() {
            *item = Item::Table(Table::new());
        }
        table = item.as_table_mut().expect("a table");
    }
    table
}

/// Whether cogni's loader accepts `text` as a config file: parsed (types,
/// unknown keys, hooks, effects) and checked (each table, also in every
/// profile), as `cogni run` would before reading anything else.
pub(super) fn check(text: &str) -> Result<(), String> {
    let file = ConfigFile::parse(Path::new("cogni.toml"), text).map_err(|e| {
        // The place in this one-setting text means nothing to the reader.
        let message = e.0;
        match message.strip_prefix("cogni.toml:") {
            Some(rest) => rest
                .split_once(": ")
                .map_or(rest.to_string(), |(_, m)| m.to_string()),
            None => message,
        }
    })?;
    for layer in std::iter::once(&file).chain(file.profiles.values()) {
        config::validate(layer.clone()).map_err(|e| e.0)?;
    }
    Ok(())
}

/// A string list as a TOML array.
pub(super) fn strings<'a>(items: impl IntoIterator<Item = &'a str>) -> Value {
    Value::Array(items.into_iter().collect())
}

/// A string map as an inline table.
pub(super) fn string_map<'a>(pairs: impl IntoIterator<Item = (&'a str, &'a str)>) -> Value {
    let mut table = InlineTable::new();
    for (k, v) in pairs {
        table.insert(k, v.into());
    }
    Value::InlineTable(table)
}

/// `path` as written in a setting: `~/` is the home directory, a relative
/// path is relative to `base`.
pub(super) fn absolute(path: &str, base: &Path, home: Option<&Path>) -> PathBuf {
    match (path.strip_prefix("~/"), home) {
        (Some(rest), Some(home)) => home.join(rest),
        _ => base.join(path),
    }
}

/// An MCP server's name as cogni takes it (letters, digits, `_`, `-`: it
/// is part of its tools' names); `None` when it needs no change.
pub(super) fn server_name(name: &str) -> Option<String> {
    let fixed: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '-'
            }
        })
        .collect();
    (fixed != name).then_some(fixed)
}

/// Print or write what an import made. `default_target` is where
/// `--write` writes without `--to`; `project` is the project directory of
/// an import from a project's files, whose trust is reported after the
/// write.
pub(super) fn finish(
    import: &Import,
    write: &WriteArgs,
    default_target: PathBuf,
    project: Option<&Path>,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<u8, String> {
    let text = import.render();
    if let Err(why) = check(&text) {
        eprintln!(
            "cogni: internal error: the imported settings do not load as cogni.toml ({why}); \
             please report this with the file you imported"
        );
        return Ok(exit::TASK_FAILED);
    }
    let skipped = import.skipped.len();
    if skipped > 0 {
        eprintln!(
            "cogni: {skipped} setting{} not imported (no cogni equivalent); the comments at the end \
             of the output say which and why",
            if skipped == 1 { " was" } else { "s were" }
        );
    }
    if !write.write {
        print!("{text}");
        return Ok(exit::DONE);
    }
    let target = write.to.clone().unwrap_or(default_target);
    if let Some(dir) = project {
        let runs = import.has(&["hooks"]) || import.has(&["mcp_servers"]);
        let home = config::cogni_home(env);
        if runs && config::dir_is_trusted(&home, dir).map_err(|e| e.to_string())? {
            return Err(format!(
                "{} is trusted (`cogni trust`), so hooks and MCP servers written into its cogni.toml \
                 would run from its next session, without you reading them first; nothing was written. \
                 Leave out --write, read the settings and add what you want yourself, or `cogni trust \
                 revoke {}` first",
                dir.display(),
                dir.display()
            ));
        }
    }
    if !write.force && std::fs::symlink_metadata(&target).is_ok() {
        return Err(format!(
            "{} exists; nothing was written. Leave out --write to print the settings and merge \
             them yourself, use --to PATH for another file, or --force to replace it",
            target.display()
        ));
    }
    crate::tools::fs::write_atomic(&target, text.as_bytes())
        .map_err(|e| format!("cannot write {}: {e}", target.display()))?;
    println!("wrote {}", target.display());
    if let Some(dir) = project {
        report_trust(dir, env);
    }
    Ok(exit::DONE)
}

/// After a project's settings were written to its cogni.toml: what a
/// session there ignores until `cogni trust`, as the session would say.
fn report_trust(dir: &Path, env: &dyn Fn(&str) -> Option<String>) {
    let layers = config::read_layers(&Sources {
        home: config::cogni_home(env),
        cwd: dir.to_path_buf(),
        explicit: None,
        flags: ConfigFile::default(),
        env,
    });
    match layers {
        Ok(layers) => {
            for warning in layers.warnings {
                eprintln!("cogni: {warning}");
            }
        }
        Err(e) => eprintln!("cogni: warning: {e}"),
    }
}

/// Refuse `--from DIR` when DIR is a project's settings directory (a
/// `.claude` or `.codex` anywhere but in your home directory): its
/// settings came with the project, and `--write` would make them yours.
pub(super) fn not_a_project(dir: &Path, home: Option<&Path>, hint: &str) -> Result<(), String> {
    let Ok(real) = crate::sandbox::sys::canonicalize(dir) else {
        return Ok(());
    };
    let named = real
        .file_name()
        .is_some_and(|n| n == ".claude" || n == ".codex");
    let home = home.and_then(|h| crate::sandbox::sys::canonicalize(h).ok());
    if named && real.parent() != home.as_deref() {
        return Err(format!(
            "{}: a project's settings directory, not yours; {hint}",
            dir.display()
        ));
    }
    Ok(())
}
