//! One skill: its SKILL.md read leniently (every problem noted, the skill
//! kept wherever it can be), and what the model reads when it is loaded.

use super::{Scope, SKIPPED_DIRS};
use crate::front_matter;
use crate::fs::read_head;
use serde::Deserialize;
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

/// Longest skill name, in characters (the Agent Skills format's limit).
pub const MAX_NAME_CHARS: usize = 64;
/// Longest description, in characters; a longer one is listed cut.
pub const MAX_DESCRIPTION_CHARS: usize = 1024;
/// Longest `compatibility`, in characters.
pub const MAX_COMPATIBILITY_CHARS: usize = 500;
/// The most of a SKILL.md that is read, in bytes.
pub const MAX_SKILL_BYTES: usize = 64 * 1024;
/// Files listed when a skill is loaded; the rest are counted.
const MAX_FILES_LISTED: usize = 200;
/// How deep under its folder a skill's files are listed.
const MAX_FILE_DEPTH: usize = 6;

/// A loaded skill.
#[derive(Debug, Clone, PartialEq)]
pub struct Skill {
    /// The name it is loaded by: the front matter's `name` when it is a
    /// valid name, else the folder's.
    pub name: String,
    /// When to use it (empty when SKILL.md has none).
    pub description: String,
    /// The skill's folder (SKILL.md's directory).
    pub dir: PathBuf,
    /// Whether it is the project's or the user's.
    pub scope: Scope,
    /// The front matter's `license`, as written.
    pub license: Option<String>,
    /// The front matter's `compatibility` (what the skill needs of its
    /// environment), as written.
    pub compatibility: Option<String>,
    /// The front matter's `metadata` table: free key-value pairs, kept as
    /// written.
    pub metadata: BTreeMap<String, String>,
    /// `allowed-tools`, as written (shown, not enforced).
    pub allowed_tools: Vec<String>,
    /// The procedure: SKILL.md after its front matter.
    pub body: String,
    /// What is wrong with it; it is loaded all the same.
    pub problems: Vec<String>,
}

/// The front matter's keys; others (another tool's extensions) are ignored.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "kebab-case")]
struct Front {
    name: Option<String>,
    description: Option<String>,
    license: Option<String>,
    compatibility: Option<String>,
    #[serde(default)]
    metadata: BTreeMap<String, String>,
    allowed_tools: Option<AllowedTools>,
}

/// `allowed-tools`: the format's space-separated string, or a list.
#[derive(Debug, Deserialize)]
#[serde(untagged)]
enum AllowedTools {
    Text(String),
    List(Vec<String>),
}

/// Why `name` is not a valid skill name, if it is not.
pub fn name_problem(name: &str) -> Option<String> {
    let problem = if name.is_empty() {
        "is empty".to_string()
    } else if name.chars().count() > MAX_NAME_CHARS {
        format!(
            "has {} characters; the limit is {MAX_NAME_CHARS}",
            name.chars().count()
        )
    } else if !name
        .chars()
        .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
    {
        "may only have lowercase letters, digits and hyphens".to_string()
    } else if name.starts_with('-') || name.ends_with('-') || name.contains("--") {
        "may not start or end with a hyphen or have two in a row".to_string()
    } else {
        return None;
    };
    Some(format!("the name `{name}` {problem}"))
}

/// `name` and `description` from a block that is not valid YAML: each
/// from its own unindented `key: value` line, quotes removed.
fn loose_front(front: &str) -> Front {
    let field = |key: &str| {
        front.lines().find_map(|line| {
            let value = line.strip_prefix(key)?.strip_prefix(':')?.trim();
            let unquoted = value
                .strip_prefix('"')
                .and_then(|v| v.strip_suffix('"'))
                .or_else(|| value.strip_prefix('\'').and_then(|v| v.strip_suffix('\'')))
                .unwrap_or(value);
            (!unquoted.is_empty()).then(|| unquoted.to_string())
        })
    };
    Front {
        name: field("name"),
        description: field("description"),
        ..Default::default()
    }
}

/// White space (line breaks included) collapsed to single spaces.
fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

impl Skill {
    /// The skill in folder `dir` from its SKILL.md text. Never fails: what
    /// is wrong becomes a problem and the rest is kept.
    pub fn parse(dir: &Path, scope: Scope, text: &str) -> Skill {
        let folder = dir
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let mut problems = Vec::new();
        let (front, body) = match front_matter::split(text) {
            Ok(("", body)) => {
                problems.push(
                    "SKILL.md has no front matter (`---` lines around `name:` and `description:`)"
                        .to_string(),
                );
                (Front::default(), body)
            }
            Ok((front, body)) => match front_matter::yaml::<Front>(front) {
                Ok(parsed) => (parsed, body),
                Err(e) => {
                    problems.push(format!(
                        "invalid YAML front matter ({e}); only `name` and `description` were read"
                    ));
                    (loose_front(front), body)
                }
            },
            Err(e) => {
                problems.push(e);
                (Front::default(), text)
            }
        };
        let name = match front.name.as_deref().map(str::trim) {
            None | Some("") => {
                problems.push(format!("no `name`: the folder's (`{folder}`) is used"));
                problems.extend(name_problem(&folder));
                folder.clone()
            }
            Some(name) => {
                let invalid = name_problem(name);
                if name != folder {
                    problems.push(format!(
                        "the name `{name}` is not the folder's (`{folder}`): rename one to match"
                    ));
                }
                match invalid {
                    Some(problem) => {
                        problems.push(format!("{problem}; the folder's name is used"));
                        problems.extend(name_problem(&folder));
                        folder.clone()
                    }
                    None => name.to_string(),
                }
            }
        };
        let description = front
            .description
            .as_deref()
            .map(one_line)
            .unwrap_or_default();
        let chars = description.chars().count();
        if description.is_empty() {
            problems.push(
                "no `description`: the listing shows the name only, so the model cannot tell when to use it"
                    .to_string(),
            );
        } else if chars > MAX_DESCRIPTION_CHARS {
            problems.push(format!(
                "the description has {chars} characters; the limit is {MAX_DESCRIPTION_CHARS} (the listing shows the first {MAX_DESCRIPTION_CHARS})"
            ));
        }
        if let Some(c) = &front.compatibility {
            let chars = c.chars().count();
            if chars > MAX_COMPATIBILITY_CHARS {
                problems.push(format!(
                    "`compatibility` has {chars} characters; the limit is {MAX_COMPATIBILITY_CHARS}"
                ));
            }
        }
        let body = body.trim().to_string();
        if body.is_empty() {
            problems.push("the body is empty: there is no procedure to follow".to_string());
        }
        Skill {
            name,
            description,
            dir: dir.to_path_buf(),
            scope,
            license: front.license,
            compatibility: front.compatibility,
            metadata: front.metadata,
            allowed_tools: match front.allowed_tools {
                None => Vec::new(),
                Some(AllowedTools::List(list)) => list,
                Some(AllowedTools::Text(text)) => text
                    .split(|c: char| c.is_whitespace() || c == ',')
                    .filter(|t| !t.is_empty())
                    .map(String::from)
                    .collect(),
            },
            body,
            problems,
        }
    }

    /// Read `dir/SKILL.md` (at most [`MAX_SKILL_BYTES`] of it); an error
    /// when it cannot be read as text.
    pub fn load(dir: &Path, scope: Scope) -> Result<Skill, String> {
        let path = dir.join("SKILL.md");
        let head = read_head(&path, MAX_SKILL_BYTES as u64).map_err(|e| e.to_string())?;
        let cut = head.cut;
        let text = head
            .into_text()
            .ok_or_else(|| format!("{} is not UTF-8 text", path.display()))?;
        let mut skill = Skill::parse(dir, scope, &text);
        if cut {
            skill.problems.push(format!(
                "SKILL.md is larger than {} KiB; only its first {} KiB are used",
                MAX_SKILL_BYTES / 1024,
                MAX_SKILL_BYTES / 1024
            ));
        }
        Ok(skill)
    }

    /// Its line in the system prompt's listing.
    pub fn listing_line(&self) -> String {
        if self.description.is_empty() {
            return format!("- {}\n", self.name);
        }
        let description: String = self
            .description
            .chars()
            .take(MAX_DESCRIPTION_CHARS)
            .collect();
        format!("- {}: {description}\n", self.name)
    }

    /// The files under the skill's folder (SKILL.md aside), sorted, at
    /// most 200; and how many more there are.
    pub fn files(&self) -> (Vec<PathBuf>, usize) {
        let mut builder = super::super::walk::builder(&self.dir);
        builder
            .max_depth(Some(MAX_FILE_DEPTH))
            .filter_entry(|e| !SKIPPED_DIRS.iter().any(|s| e.file_name() == *s));
        let mut files: Vec<PathBuf> = builder
            .build()
            .filter_map(Result::ok)
            .filter(|e| e.file_type().is_some_and(|t| t.is_file()))
            .map(|e| e.into_path())
            .filter(|p| p.parent() != Some(&self.dir) || p.file_name() != Some("SKILL.md".as_ref()))
            .collect();
        files.sort();
        let more = files.len().saturating_sub(MAX_FILES_LISTED);
        files.truncate(MAX_FILES_LISTED);
        (files, more)
    }

    /// What the model reads when the skill is loaded (`$name`, the `skill`
    /// tool): the procedure, then its folder's files, listed but not read
    /// (paths as shown from `cwd`).
    pub fn render(&self, cwd: &Path) -> String {
        let dir = super::super::paths::display(cwd, &self.dir);
        let mut out = format!(
            "<skill name=\"{}\" folder=\"{dir}\">\n{}\n",
            self.name, self.body
        );
        let (files, more) = self.files();
        if !files.is_empty() {
            let _ = writeln!(
                out,
                "\nPaths in the procedure are relative to the skill's folder, {dir}. Its files (read one with read_file when the procedure needs it):"
            );
            for file in &files {
                let _ = writeln!(out, "- {}", super::super::paths::display(cwd, file));
            }
            if more > 0 {
                let _ = writeln!(out, "- ... and {more} more (list_dir shows them)");
            }
        }
        out.push_str("</skill>");
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(folder: &str, text: &str) -> Skill {
        Skill::parse(&Path::new("/s").join(folder), Scope::Project, text)
    }

    #[test]
    fn a_valid_skill_has_no_problems_and_keeps_every_field() {
        let s = parse(
            "pdf-forms",
            "---\nname: pdf-forms\ndescription: >\n  Fill PDF forms.\n  Use when a form is given.\nlicense: MIT\ncompatibility: needs python3\nmetadata:\n  version: 1.0\n  author: me\nallowed-tools: Bash(python3:*) Read\n---\n\n# Steps\n1. Read the form.\n",
        );
        assert_eq!(s.problems, Vec::<String>::new());
        assert_eq!(s.name, "pdf-forms");
        assert_eq!(s.description, "Fill PDF forms. Use when a form is given.");
        assert_eq!(s.license.as_deref(), Some("MIT"));
        assert_eq!(s.compatibility.as_deref(), Some("needs python3"));
        assert_eq!(s.metadata["version"], "1.0");
        assert_eq!(s.allowed_tools, ["Bash(python3:*)", "Read"]);
        assert_eq!(s.body, "# Steps\n1. Read the form.");
        assert_eq!(
            s.listing_line(),
            "- pdf-forms: Fill PDF forms. Use when a form is given.\n"
        );
    }

    #[test]
    fn names_follow_the_format() {
        for good in ["a", "pdf", "x-2", &"a".repeat(64)] {
            assert_eq!(name_problem(good), None, "{good}");
        }
        for bad in ["", "PDF", "a_b", "-a", "a-", "a--b", "a b", &"a".repeat(65)] {
            assert!(name_problem(bad).is_some(), "{bad}");
        }
    }

    #[test]
    fn a_name_unlike_the_folder_is_a_problem_and_the_name_is_kept() {
        let s = parse("pdf", "---\nname: forms\ndescription: d\n---\nbody");
        assert_eq!(s.name, "forms");
        assert_eq!(s.problems.len(), 1, "{:?}", s.problems);
        assert!(s.problems[0].contains("not the folder's (`pdf`)"));
        // An invalid name falls back to the folder's.
        let s = parse("pdf", "---\nname: PDF Forms\ndescription: d\n---\nbody");
        assert_eq!(s.name, "pdf");
        assert!(s.problems.iter().any(|p| p.contains("lowercase")));
        // No name at all: the folder's.
        let s = parse("pdf", "---\ndescription: d\n---\nbody");
        assert_eq!(s.name, "pdf");
        assert!(s.problems[0].contains("no `name`"));
    }

    #[test]
    fn a_long_description_is_a_problem_and_listed_cut() {
        let long = "x".repeat(MAX_DESCRIPTION_CHARS + 10);
        let s = parse(
            "a",
            &format!("---\nname: a\ndescription: {long}\n---\nbody"),
        );
        assert_eq!(s.description.len(), MAX_DESCRIPTION_CHARS + 10);
        assert!(
            s.problems[0].contains("1034 characters"),
            "{:?}",
            s.problems
        );
        assert_eq!(
            s.listing_line().len(),
            "- a: ".len() + MAX_DESCRIPTION_CHARS + 1
        );
    }

    #[test]
    fn bad_yaml_still_gives_the_name_and_description() {
        // An unquoted `: ` in a value is not YAML; such files are common.
        let s = parse(
            "deploy",
            "---\nname: deploy\ndescription: Deploy the app. Use when: the user says ship it\nmetadata: [\n---\nRun make deploy.\n",
        );
        assert_eq!(s.name, "deploy");
        assert_eq!(
            s.description,
            "Deploy the app. Use when: the user says ship it"
        );
        assert_eq!(s.body, "Run make deploy.");
        assert_eq!(s.problems.len(), 1, "{:?}", s.problems);
        assert!(s.problems[0].starts_with("invalid YAML front matter ("));
    }

    #[test]
    fn no_front_matter_no_description_no_body_are_problems() {
        let s = parse("notes", "Just text.\n");
        assert_eq!(s.name, "notes");
        assert_eq!(s.body, "Just text.");
        assert!(
            s.problems[0].contains("no front matter"),
            "{:?}",
            s.problems
        );
        assert!(s.problems.iter().any(|p| p.contains("no `description`")));
        assert_eq!(s.listing_line(), "- notes\n");
        let s = parse("a", "---\nname: a\ndescription: d\n---\n");
        assert_eq!(
            s.problems,
            ["the body is empty: there is no procedure to follow"]
        );
        let s = parse("a", "---\nname: a\ndescription: d\n");
        assert!(
            s.problems[0].contains("no closing `---`"),
            "{:?}",
            s.problems
        );
    }

    #[cfg(unix)]
    #[test]
    fn loading_lists_files_but_does_not_read_them() {
        let dir = tempfile::tempdir().unwrap();
        let skill = dir.path().join("pdf");
        std::fs::create_dir_all(skill.join("scripts")).unwrap();
        std::fs::create_dir_all(skill.join("node_modules/x")).unwrap();
        std::fs::write(
            skill.join("SKILL.md"),
            "---\nname: pdf\ndescription: d\n---\nRun scripts/fill.py.\n",
        )
        .unwrap();
        std::fs::write(skill.join("scripts/fill.py"), "SECRET CONTENT").unwrap();
        std::fs::write(skill.join("node_modules/x/i.js"), "").unwrap();
        let s = Skill::load(&skill, Scope::User).unwrap();
        let text = s.render(dir.path());
        assert!(text.starts_with("<skill name=\"pdf\" folder=\"pdf\">\nRun scripts/fill.py.\n"));
        assert!(text.contains("\n- pdf/scripts/fill.py\n"), "{text}");
        assert!(!text.contains("SECRET"), "{text}");
        assert!(!text.contains("node_modules"), "{text}");
        assert!(!text.contains("SKILL.md"), "{text}");
        assert!(text.ends_with("</skill>"));
    }

    #[test]
    fn an_unreadable_or_huge_skill_file() {
        let dir = tempfile::tempdir().unwrap();
        let skill = dir.path().join("big");
        std::fs::create_dir_all(&skill).unwrap();
        assert!(Skill::load(&skill, Scope::User)
            .unwrap_err()
            .contains("cannot read"));
        std::fs::write(skill.join("SKILL.md"), [0xff, 0xfe]).unwrap();
        assert!(Skill::load(&skill, Scope::User)
            .unwrap_err()
            .contains("not UTF-8"));
        let text = format!(
            "---\nname: big\ndescription: d\n---\n{}",
            "é".repeat(MAX_SKILL_BYTES)
        );
        std::fs::write(skill.join("SKILL.md"), text).unwrap();
        let s = Skill::load(&skill, Scope::User).unwrap();
        assert!(
            s.problems[0].contains("larger than 64 KiB"),
            "{:?}",
            s.problems
        );
        assert!(s.body.len() < MAX_SKILL_BYTES);
    }
}
