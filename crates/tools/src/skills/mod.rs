//! Skills in the open Agent Skills format (docs/skills.md): a folder with a
//! SKILL.md (YAML front matter: `name`, `description`, ...; the body is a
//! procedure) and any files the procedure uses.
//!
//! Where they are found ([`roots`]), nearest first: `.cogni/skills/` and
//! `.agents/skills/` in the working directory and each parent up to the
//! repository root (project skills, loaded only where the user trusts the
//! directory), then `$COGNI_HOME/skills/` and `~/.agents/skills/` (the
//! user's). The first skill of a name wins. Only these directories are
//! read, never the rest of the repository.
//!
//! Disclosure is progressive: the system prompt lists names and
//! descriptions within a byte budget ([`Skills::listing`]); the body is
//! read into the conversation when the user names a skill (`$name`,
//! [`Skills::mentioned`]) or the model calls the `skill` tool
//! ([`tool::SkillTool`]); the folder's other files are listed, not read.

mod skill;
pub mod tool;

pub use skill::{name_problem, Skill, MAX_DESCRIPTION_CHARS, MAX_NAME_CHARS, MAX_SKILL_BYTES};

use std::path::{Path, PathBuf};

/// The name of the tool that loads a skill.
pub const SKILL_TOOL: &str = "skill";

/// Default budget of the system prompt's listing, in bytes.
pub const DEFAULT_MAX_LISTING_BYTES: usize = 8192;

/// Directories never entered, looking for skills or listing their files.
const SKIPPED_DIRS: [&str; 2] = [".git", "node_modules"];

/// How many directories below a skills directory a SKILL.md is looked for
/// (`skills/NAME/SKILL.md` is one; grouping folders add one each).
const MAX_SKILL_DEPTH: usize = 3;

/// Whose a skill is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    /// Found from the working directory up to the repository root.
    Project,
    /// `$COGNI_HOME/skills/`, `~/.agents/skills/`.
    User,
}

impl Scope {
    /// The scope's name in listings and warnings (`project`, `user`).
    pub fn as_str(self) -> &'static str {
        match self {
            Scope::Project => "project",
            Scope::User => "user",
        }
    }
}

/// A directory skills are looked for in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Root {
    /// The directory (`.cogni/skills`, `$COGNI_HOME/skills`, ...), one
    /// skill folder per subdirectory.
    pub dir: PathBuf,
    /// Whether it is the project's or the user's.
    pub scope: Scope,
}

/// Where skills are looked for, nearest first: `.cogni/skills` and
/// `.agents/skills` in `cwd` and each parent up to the repository root
/// (only `cwd` outside a repository), then `home/skills` (`$COGNI_HOME`)
/// and `user_home/.agents/skills` (`~`). Directories that do not exist
/// are left out; one that is both a project's and the user's (working in
/// `~`) counts as the user's.
pub fn roots(cwd: &Path, home: &Path, user_home: Option<&Path>) -> Vec<Root> {
    let user: Vec<PathBuf> = [
        Some(home.join("skills")),
        user_home.map(|h| h.join(".agents/skills")),
    ]
    .into_iter()
    .flatten()
    .filter(|d| d.is_dir())
    .collect();
    let same = |a: &Path, b: &Path| match (a.canonicalize(), b.canonicalize()) {
        (Ok(a), Ok(b)) => a == b,
        _ => a == b,
    };
    let top = super::paths::repo_root(cwd).unwrap_or_else(|| cwd.to_path_buf());
    let mut out = Vec::new();
    for dir in cwd.ancestors() {
        for sub in [".cogni/skills", ".agents/skills"] {
            let root = dir.join(sub);
            if root.is_dir() && !user.iter().any(|u| same(u, &root)) {
                out.push(Root {
                    dir: root,
                    scope: Scope::Project,
                });
            }
        }
        if dir == top {
            break;
        }
    }
    for dir in user {
        if !out.iter().any(|r: &Root| same(&r.dir, &dir)) {
            out.push(Root {
                dir,
                scope: Scope::User,
            });
        }
    }
    out
}

/// The skill folders under `root` (directories holding a SKILL.md), in
/// name order, up to [`MAX_SKILL_DEPTH`] levels down; a skill's own
/// subdirectories are not searched for more skills.
fn skill_dirs(root: &Path) -> Vec<PathBuf> {
    fn visit(dir: &Path, depth: usize, out: &mut Vec<PathBuf>) {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return;
        };
        let mut children: Vec<PathBuf> = entries
            .filter_map(Result::ok)
            .filter(|e| !SKIPPED_DIRS.iter().any(|s| e.file_name() == *s))
            .map(|e| e.path())
            // Follows links: a linked skill folder is common.
            .filter(|p| p.is_dir())
            .collect();
        children.sort();
        for child in children {
            if child.join("SKILL.md").is_file() {
                out.push(child);
            } else if depth < MAX_SKILL_DEPTH {
                visit(&child, depth + 1, out);
            }
        }
    }
    let mut out = Vec::new();
    visit(root, 1, &mut out);
    out
}

/// A skill that was found and not loaded.
#[derive(Debug, Clone, PartialEq)]
pub struct Skipped {
    /// The skill's folder.
    pub dir: PathBuf,
    /// The scope of the root it was found in.
    pub scope: Scope,
    /// Why it was not loaded.
    pub reason: Reason,
}

/// Why a skill was not loaded.
#[derive(Debug, Clone, PartialEq)]
pub enum Reason {
    /// A skill of the same name nearer the working directory (or a
    /// project's, over the user's) won; its folder.
    Shadowed(PathBuf),
    /// A project skill in a directory the user does not trust.
    Untrusted,
    /// SKILL.md could not be read as text.
    Unreadable(String),
}

/// The skills of a session: found once when it starts.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Skills {
    /// Loaded, nearest first, one per name.
    skills: Vec<Skill>,
    /// Found and not loaded.
    skipped: Vec<Skipped>,
    /// Where they were looked for.
    roots: Vec<Root>,
    /// The listing's lines, within the budget.
    listing: String,
    /// Names the listing has no room for.
    left_out: Vec<String>,
    max_listing_bytes: usize,
}

impl Skills {
    /// Load the skills under `roots` (nearest first). Project roots load
    /// only when `trusted(root)`; the listing takes skills in the same
    /// order while they fit `max_listing_bytes` (one that does not fit is
    /// left out and later, shorter ones may still go in).
    pub fn load(
        roots: Vec<Root>,
        trusted: impl Fn(&Path) -> bool,
        max_listing_bytes: usize,
    ) -> Skills {
        let mut skills: Vec<Skill> = Vec::new();
        let mut skipped = Vec::new();
        for root in &roots {
            let dirs = skill_dirs(&root.dir);
            if root.scope == Scope::Project && !dirs.is_empty() && !trusted(&root.dir) {
                skipped.extend(dirs.into_iter().map(|dir| Skipped {
                    dir,
                    scope: root.scope,
                    reason: Reason::Untrusted,
                }));
                continue;
            }
            for dir in dirs {
                match Skill::load(&dir, root.scope) {
                    Ok(skill) => match skills.iter().find(|s| s.name == skill.name) {
                        Some(winner) => skipped.push(Skipped {
                            dir,
                            scope: root.scope,
                            reason: Reason::Shadowed(winner.dir.clone()),
                        }),
                        None => skills.push(skill),
                    },
                    Err(e) => skipped.push(Skipped {
                        dir,
                        scope: root.scope,
                        reason: Reason::Unreadable(e),
                    }),
                }
            }
        }
        let mut listing = String::new();
        let mut left_out = Vec::new();
        for skill in &skills {
            let line = skill.listing_line();
            if listing.len() + line.len() > max_listing_bytes {
                left_out.push(skill.name.clone());
            } else {
                listing.push_str(&line);
            }
        }
        Skills {
            skills,
            skipped,
            roots,
            listing,
            left_out,
            max_listing_bytes,
        }
    }

    /// The loaded skills, nearest first.
    pub fn all(&self) -> &[Skill] {
        &self.skills
    }

    /// True when no skill was loaded.
    pub fn is_empty(&self) -> bool {
        self.skills.is_empty()
    }

    /// The loaded skill named `name`, if any.
    pub fn get(&self, name: &str) -> Option<&Skill> {
        self.skills.iter().find(|s| s.name == name)
    }

    /// Found and not loaded (shadowed, untrusted, unreadable).
    pub fn skipped(&self) -> &[Skipped] {
        &self.skipped
    }

    /// Where skills were looked for.
    pub fn roots(&self) -> &[Root] {
        &self.roots
    }

    /// The system prompt's listing: `- name: description` lines within
    /// the budget (empty without skills).
    pub fn listing(&self) -> &str {
        &self.listing
    }

    /// Skills the listing has no room for (they still load by name).
    pub fn left_out(&self) -> &[String] {
        &self.left_out
    }

    /// The listing's budget in bytes (`[skills] max_listing_bytes`).
    pub fn max_listing_bytes(&self) -> usize {
        self.max_listing_bytes
    }

    /// The skills `text` names as `$name`, each once, in the order named.
    /// `$` must start a word and the name end one; names that are no
    /// skill's (`$HOME`, `$5`) are not mentions.
    pub fn mentioned(&self, text: &str) -> Vec<&Skill> {
        let is_name_char = |c: char| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-';
        let mut found: Vec<&Skill> = Vec::new();
        for (at, _) in text.match_indices('$') {
            let before = text[..at].chars().next_back();
            if before.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == '$' || c == '\\') {
                continue;
            }
            let rest = &text[at + 1..];
            let end = rest.find(|c: char| !is_name_char(c)).unwrap_or(rest.len());
            if rest[end..]
                .chars()
                .next()
                .is_some_and(|c| c.is_alphanumeric() || c == '_')
            {
                continue;
            }
            // A trailing hyphen is punctuation (`$pdf-` in "use $pdf- then").
            let name = rest[..end].trim_end_matches('-');
            if let Some(skill) = self.get(name) {
                if !found.iter().any(|s| s.name == skill.name) {
                    found.push(skill);
                }
            }
        }
        found
    }

    /// What a session reports when it starts: skills left out of the
    /// listing, project skills ignored as untrusted, unreadable ones, and
    /// each loaded skill's problems. Shadowed skills are no news.
    pub fn warnings(&self) -> Vec<String> {
        let mut out = Vec::new();
        if !self.left_out.is_empty() {
            out.push(format!(
                "skills left out of the system prompt's listing, which is full ([skills] max_listing_bytes = {}): {}; they still load when named ($NAME) or through the skill tool",
                self.max_listing_bytes,
                self.left_out.join(", ")
            ));
        }
        let untrusted: Vec<String> = self
            .skipped
            .iter()
            .filter(|s| s.reason == Reason::Untrusted)
            .map(|s| s.dir.display().to_string())
            .collect();
        if !untrusted.is_empty() {
            out.push(format!(
                "project skills ignored, the directory is not trusted (run `cogni trust` there if you trust it): {}",
                untrusted.join(", ")
            ));
        }
        for s in &self.skipped {
            if let Reason::Unreadable(e) = &s.reason {
                out.push(format!("skill not loaded: {e}"));
            }
        }
        for skill in &self.skills {
            if !skill.problems.is_empty() {
                out.push(format!(
                    "skill `{}` ({}): {}",
                    skill.name,
                    skill.dir.join("SKILL.md").display(),
                    skill.problems.join("; ")
                ));
            }
        }
        out
    }
}

#[cfg(test)]
mod tests;
