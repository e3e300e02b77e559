//! Files that describe work rather than configure cogni: task files for the
//! CI runner ([`tasks`]) and agent cards ([`cards`]). Parsing and validation only; the only I/O is
//! reading the files and the files they name.
//!
//! Every problem is reported with where it is: `file:line:col` for syntax
//! and type errors, the key's path (`tasks[2].checks[0].answer_regex`) for
//! everything else, so one run of `cogni validate` lists all of them.

#![deny(missing_docs)]

pub mod cards;
pub mod effects;
pub mod hooks;
pub mod strategies;
pub mod tasks;

use serde::de::DeserializeOwned;
use std::fmt;
use std::path::{Path, PathBuf};

/// A TOML deserializer's message in the file's own terms: no Rust type
/// names (`expected struct SandboxLimitsFile` reads `expected a table`,
/// `expected f64` reads `expected a number`).
pub fn plain_message(message: &str) -> String {
    let re = regex::Regex::new(
        r"(?:struct|enum) [A-Z][A-Za-z0-9]*|\b(?:f32|f64)\b|\b(?:[ui](?:8|16|32|64|128|size))\b",
    )
    .expect("a valid regex");
    let plain = re.replace_all(message.trim(), |c: &regex::Captures| {
        let m = &c[0];
        if m.starts_with("struct") || m.starts_with("enum") {
            "a table"
        } else if m.starts_with('f') {
            "a number"
        } else {
            "a whole number"
        }
    });
    plain.into_owned()
}

/// One thing wrong with a file, and where.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    /// A key path (`tasks[0].budget`), or `line:col` for syntax errors.
    pub at: String,
    /// What is wrong, one readable sentence.
    pub message: String,
}

impl Problem {
    /// A problem at `at` (a key path or `line:col`).
    pub fn new(at: impl Into<String>, message: impl Into<String>) -> Self {
        Problem {
            at: at.into(),
            message: message.into(),
        }
    }
}

/// Everything wrong with one file.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub struct SpecError {
    /// The file the problems are in.
    pub file: PathBuf,
    /// Every problem found in it, each with where it is.
    pub problems: Vec<Problem>,
}

impl fmt::Display for SpecError {
    /// One line per problem: `file:at: message`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, p) in self.problems.iter().enumerate() {
            if i > 0 {
                f.write_str("\n")?;
            }
            write!(f, "{}:{}: {}", self.file.display(), p.at, p.message)?;
        }
        Ok(())
    }
}

/// Parse TOML into `T`. Syntax and type errors come back as one problem at
/// `line:col`; keys `T` does not know are returned by their paths, for the
/// caller to report next to its own findings.
pub(crate) fn parse_toml<T: DeserializeOwned>(source: &str) -> Result<(T, Vec<String>), Problem> {
    let position = |e: &toml::de::Error| match e.span() {
        Some(span) => {
            let (line, col) = line_col(source, span.start);
            format!("{line}:{col}")
        }
        None => "1:1".to_string(),
    };
    let de = toml::Deserializer::parse(source)
        .map_err(|e| Problem::new(position(&e), format!("invalid TOML: {}", e.message())))?;
    let mut unknown = Vec::new();
    let value = serde_ignored::deserialize(de, |path| unknown.push(key_path(&path)))
        .map_err(|e| Problem::new(position(&e), plain_message(e.message())))?;
    Ok((value, unknown))
}

/// `tasks[0].checks[1].regex` for a path serde_ignored reports.
fn key_path(path: &serde_ignored::Path<'_>) -> String {
    use serde_ignored::Path as P;
    match path {
        P::Root => String::new(),
        P::Seq { parent, index } => format!("{}[{index}]", key_path(parent)),
        P::Map { parent, key } => {
            let parent = key_path(parent);
            if parent.is_empty() {
                key.clone()
            } else {
                format!("{parent}.{key}")
            }
        }
        P::Some { parent } | P::NewtypeStruct { parent } | P::NewtypeVariant { parent } => {
            key_path(parent)
        }
    }
}

/// 1-based line and column of a byte offset.
fn line_col(source: &str, offset: usize) -> (usize, usize) {
    let before = &source[..offset.min(source.len())];
    let line = before.matches('\n').count() + 1;
    let col = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
    (line, col)
}

/// `path` relative to `dir` unless it is absolute.
fn resolve(dir: &Path, path: &Path) -> PathBuf {
    if path.is_absolute() {
        path.to_path_buf()
    } else {
        dir.join(path)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Deserialize;

    #[test]
    fn messages_speak_in_the_files_terms() {
        for (rust, plain) in [
            (
                "invalid type: string \"x\", expected f64",
                "invalid type: string \"x\", expected a number",
            ),
            (
                "invalid value: integer `-1`, expected usize",
                "invalid value: integer `-1`, expected a whole number",
            ),
            (
                "invalid type: string \"readonly\", expected struct SandboxLimitsFile\n",
                "invalid type: string \"readonly\", expected a table",
            ),
            ("unknown field `u64s`", "unknown field `u64s`"),
        ] {
            assert_eq!(plain_message(rust), plain);
        }
    }

    #[derive(Debug, Deserialize)]
    #[allow(dead_code)]
    struct Outer {
        items: Vec<Inner>,
        inner: Option<Inner>,
    }

    #[derive(Debug, Deserialize)]
    #[allow(dead_code)]
    struct Inner {
        name: String,
    }

    #[test]
    fn unknown_keys_are_reported_by_path_with_indexes() {
        let (_, mut unknown) = parse_toml::<Outer>(
            "items = [{ name = \"a\" }, { name = \"b\", nmae = 1 }]\ntop = 2\n[inner]\nname = \"x\"\nextra = 3\n",
        )
        .unwrap();
        unknown.sort();
        assert_eq!(unknown, ["inner.extra", "items[1].nmae", "top"]);
    }

    #[test]
    fn syntax_and_type_errors_say_line_and_column() {
        let err = parse_toml::<Outer>("items = [\n  { name = 7 },\n]\n").unwrap_err();
        assert_eq!(err.at, "2:12");
        assert!(err.message.contains("invalid type"), "{}", err.message);
        let err = parse_toml::<Outer>("items = \n").unwrap_err();
        assert!(err.message.starts_with("invalid TOML"), "{}", err.message);
    }

    #[test]
    fn spec_errors_print_one_line_per_problem() {
        let e = SpecError {
            file: PathBuf::from("t.toml"),
            problems: vec![
                Problem::new("tasks[0].id", "empty"),
                Problem::new("3:1", "bad"),
            ],
        };
        assert_eq!(e.to_string(), "t.toml:tasks[0].id: empty\nt.toml:3:1: bad");
    }
}
