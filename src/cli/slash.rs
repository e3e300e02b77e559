//! Slash commands shared by the REPL and `cogni acp`: a front door's
//! built-ins beside user commands (markdown files in `$COGNI_HOME/commands/`
//! and, once the directory is trusted, `.cogni/commands/` and Claude
//! Code's `.claude/commands/`; the file is the prompt with `$ARGUMENTS`
//! and `$1`..`$9` replaced, its YAML front matter read, not sent) and, in
//! `cogni acp`, the session's skills (`/name ARGS` is `$name ARGS`).
//!
//! The reserved commands (`/exit`, `/quit`, `/help`, `/clear`) cannot be
//! taken. Any other built-in can be taken by one of your own commands: it
//! gets the bare `/name`, and the built-in stays reachable as
//! `/cogni:name`. A project's command never takes a name that a built-in
//! or one of yours has: it is `/project:name` instead.

use crate::agent::{Session, SessionConfig};
use crate::spec::cards as agents;
use crate::tools::fs::{read_text_limited, SPEC_FILE_MAX_BYTES};
use crate::tools::skills::Skills;
use std::path::{Path, PathBuf};

/// Names no agent command may take.
pub const RESERVED: &[&str] = &["exit", "quit", "help", "clear"];

/// A front door's built-in command, run by `H` (each front door has its
/// own handler type).
pub struct Builtin<H> {
    pub name: &'static str,
    /// Its arguments, e.g. `[NAME]`.
    pub usage: &'static str,
    /// One line of help.
    pub help: &'static str,
    pub run: H,
}

/// A command the user or a skill defines.
#[derive(Debug, Clone)]
pub struct UserCommand {
    pub name: String,
    source: Source,
}

#[derive(Debug, Clone)]
enum Source {
    /// A prompt file: its body, and its front matter's description.
    Prompt {
        path: PathBuf,
        template: String,
        description: Option<String>,
    },
    /// A skill (`$name`), with its description.
    Skill { description: String },
}

impl UserCommand {
    /// The message the command sends: a prompt file's text with
    /// `$ARGUMENTS` replaced (appended when the file does not mention it),
    /// or a skill's `$name` with the arguments.
    pub fn expand(&self, args: &str) -> String {
        match &self.source {
            Source::Prompt { template, .. } if mentions_arguments(template) => {
                substitute(template, args)
            }
            Source::Prompt { template, .. } if args.is_empty() => template.clone(),
            Source::Prompt { template, .. } => format!("{}\n\n{args}", template.trim_end()),
            Source::Skill { .. } => format!("${} {args}", self.name).trim_end().to_string(),
        }
    }

    /// One line: what it does and where it comes from.
    pub fn summary(&self) -> String {
        match &self.source {
            Source::Prompt {
                path,
                description: Some(description),
                ..
            } => format!("{}  [{}]", one_line(description), path.display()),
            Source::Prompt { path, template, .. } => {
                let first = template
                    .lines()
                    .find(|l| !l.trim().is_empty())
                    .unwrap_or("");
                let mut line: String = first
                    .trim()
                    .trim_start_matches('#')
                    .trim()
                    .chars()
                    .take(60)
                    .collect();
                if line.is_empty() {
                    line = "(empty prompt)".into();
                }
                format!("{line}  [{}]", path.display())
            }
            Source::Skill { description } => format!("{description}  [skill]"),
        }
    }
}

/// The `description:` of a command file's front matter. Claude Code's
/// files are read leniently, as Claude Code reads them (`argument-hint:
/// [number] [priority]` is not valid YAML): one `key: value` a line; the
/// other keys (`argument-hint`, `allowed-tools`, `model`) never reach the
/// model, and cogni does not apply them.
fn description(front: &str) -> Option<String> {
    front.lines().find_map(|line| {
        let value = line.strip_prefix("description:")?.trim();
        let value = value
            .strip_prefix('"')
            .and_then(|v| v.strip_suffix('"'))
            .or_else(|| value.strip_prefix('\'').and_then(|v| v.strip_suffix('\'')))
            .unwrap_or(value);
        (!value.is_empty()).then(|| value.to_string())
    })
}

/// Whether `template` takes its arguments in place (`$ARGUMENTS`, `$1`..`$9`).
fn mentions_arguments(template: &str) -> bool {
    template.contains("$ARGUMENTS") || (1..=9).any(|n| positional(template, n).next().is_some())
}

/// Where `$n` stands in `template` (not as the start of `$10`).
fn positional(template: &str, n: usize) -> std::vec::IntoIter<usize> {
    let token = format!("${n}");
    let at: Vec<usize> = template
        .match_indices(&token)
        .map(|(i, _)| i)
        .filter(|&i| !template[i + token.len()..].starts_with(|c: char| c.is_ascii_digit()))
        .collect();
    at.into_iter()
}

/// `template` with `$ARGUMENTS` as all of `args` and `$1`..`$9` as its
/// words (empty when there are fewer).
fn substitute(template: &str, args: &str) -> String {
    let words: Vec<&str> = args.split_whitespace().collect();
    let mut out = template.replace("$ARGUMENTS", args);
    for n in (1..=9).rev() {
        let word = words.get(n - 1).copied().unwrap_or("");
        for i in positional(&out, n).rev() {
            out.replace_range(i..i + 2, word);
        }
    }
    out
}

/// The first line of `text`, at most 60 characters.
fn one_line(text: &str) -> String {
    text.lines()
        .next()
        .unwrap_or("")
        .trim()
        .chars()
        .take(60)
        .collect()
}

pub enum Found<'a, H> {
    Builtin(&'a Builtin<H>),
    User(&'a UserCommand),
}

/// A front door's built-ins and the agent's commands.
pub struct Registry<H> {
    builtins: Vec<Builtin<H>>,
    user: Vec<UserCommand>,
}

impl<H> Registry<H> {
    /// `builtins`, your commands in `home`, and the project's in `cwd`
    /// when `project_trusted`, with problems to report.
    pub fn load(
        builtins: Vec<Builtin<H>>,
        cwd: &Path,
        home: &Path,
        project_trusted: bool,
    ) -> (Self, Vec<String>) {
        let mut problems = Vec::new();
        let mut registry = Registry {
            builtins,
            user: Vec::new(),
        };
        for (name, path) in agents::markdown_files(&[home.join("commands")]) {
            if RESERVED.contains(&name.as_str()) {
                problems.push(format!(
                    "{}: /{name} is reserved; the file is ignored",
                    path.display()
                ));
                continue;
            }
            registry.add_prompt(name, path, &mut problems);
        }
        // Claude Code's commands after cogni's own: a name in both is
        // `.cogni/commands/`'s.
        let mut project = agents::markdown_files(&[cwd.join(".cogni/commands")]);
        let mut shadowed = Vec::new();
        for (name, path) in agents::markdown_files(&[cwd.join(".claude/commands")]) {
            if project.iter().any(|(n, _)| *n == name) {
                shadowed.push(format!(
                    "{}: /{name} is .cogni/commands/'s; this one is ignored",
                    path.display()
                ));
            } else {
                project.push((name, path));
            }
        }
        if !project_trusted {
            if let Some((_, first)) = project.first() {
                problems.push(format!(
                    "{}: this directory is not trusted, so its {} command{} ignored; run `cogni trust` here if you trust it",
                    first.parent().unwrap_or(first).display(),
                    project.len(),
                    if project.len() == 1 { " is" } else { "s are" }
                ));
            }
            return (registry, problems);
        }
        problems.append(&mut shadowed);
        for (name, path) in project {
            let taken = RESERVED.contains(&name.as_str())
                || registry.builtin(&name).is_some()
                || registry.user.iter().any(|u| u.name == name);
            let name = if taken {
                problems.push(format!(
                    "{}: /{name} is taken, so this project command is /project:{name}",
                    path.display()
                ));
                format!("project:{name}")
            } else {
                name
            };
            registry.add_prompt(name, path, &mut problems);
        }
        (registry, problems)
    }

    /// Add the prompt file `path` as `/name`: its body, with YAML front
    /// matter (Claude Code's `description`, `argument-hint`,
    /// `allowed-tools`, `model`) read and left out of the prompt.
    fn add_prompt(&mut self, name: String, path: PathBuf, problems: &mut Vec<String>) {
        let text = match read_text_limited(&path, SPEC_FILE_MAX_BYTES) {
            Ok(text) => text,
            Err(e) => return problems.push(e.to_string()),
        };
        match crate::tools::front_matter::split(&text) {
            Ok((front, body)) => self.user.push(UserCommand {
                name,
                source: Source::Prompt {
                    path,
                    template: body.to_string(),
                    description: description(front),
                },
            }),
            Err(e) => problems.push(format!("{}: {e}; the command is ignored", path.display())),
        }
    }

    /// Add the skills as commands, after the user commands (a user
    /// command of the same name wins; the skill stays `$name`).
    pub fn add_skills(&mut self, skills: &Skills) {
        for skill in skills.all() {
            let name = &skill.name;
            if RESERVED.contains(&name.as_str()) || self.user.iter().any(|u| &u.name == name) {
                continue;
            }
            self.user.push(UserCommand {
                name: name.clone(),
                source: Source::Skill {
                    description: skill.description.clone(),
                },
            });
        }
    }

    /// The command `/name` names: an agent command before a built-in;
    /// `cogni:name` is always the built-in.
    pub fn find(&self, name: &str) -> Option<Found<'_, H>> {
        if let Some(name) = name.strip_prefix("cogni:") {
            return self.builtin(name).map(Found::Builtin);
        }
        if let Some(cmd) = self.user.iter().find(|c| c.name == name) {
            return Some(Found::User(cmd));
        }
        self.builtin(name).map(Found::Builtin)
    }

    fn builtin(&self, name: &str) -> Option<&Builtin<H>> {
        self.builtins.iter().find(|b| b.name == name)
    }

    /// The name a built-in answers to (without the slash): `cogni:NAME`
    /// when an agent command took `NAME`.
    pub fn builtin_name(&self, b: &Builtin<H>) -> String {
        if self.user.iter().any(|u| u.name == b.name) {
            format!("cogni:{}", b.name)
        } else {
            b.name.to_string()
        }
    }

    pub fn builtins(&self) -> &[Builtin<H>] {
        &self.builtins
    }

    /// The agent's commands: user commands, then skills.
    pub fn user(&self) -> &[UserCommand] {
        &self.user
    }

    /// Everything Tab may complete to.
    pub fn completion_names(&self) -> Vec<String> {
        let mut names: Vec<String> = self
            .builtins
            .iter()
            .map(|b| format!("/{}", self.builtin_name(b)))
            .collect();
        names.extend(self.user.iter().map(|u| format!("/{}", u.name)));
        names
    }

    /// One line per command, built-in and user-defined.
    pub fn help_lines(&self) -> Vec<String> {
        let mut lines = Vec::new();
        for b in &self.builtins {
            let name = format!("/{} {}", self.builtin_name(b), b.usage);
            lines.push(format!("{:<40} {}", name.trim_end(), b.help));
        }
        for u in &self.user {
            lines.push(format!(
                "{:<40} {}",
                format!("/{} [ARGS]", u.name),
                u.summary()
            ));
        }
        lines
    }
}

/// `/name args` split into the name and the trimmed arguments; `None`
/// when `text` is not a slash command.
pub fn split(text: &str) -> Option<(&str, &str)> {
    let rest = text.strip_prefix('/')?;
    Some(match rest.split_once(char::is_whitespace) {
        Some((name, args)) => (name, args.trim()),
        None => (rest, ""),
    })
}

/// `/model NAME`: switch `session` (configured as `current`) to the
/// model, keeping the conversation.
pub fn switch_model(
    session: &mut Session,
    current: &mut SessionConfig,
    model: &str,
) -> Result<(), String> {
    let mut config = current.clone();
    config.model_override = Some(model.to_string());
    session
        .reconfigure(config.clone())
        .map_err(|e| e.to_string())?;
    *current = config;
    Ok(())
}

/// The usage of `/context` with a subcommand.
pub const CONTEXT_USAGE: &str =
    "usage: /context [pop [N]|checkpoint NAME|rollback NAME|reset|summarize]";

/// `/context SUB [ARG]` (not the listing): the context stack operation,
/// and what to tell the user about it.
pub async fn context_op(session: &mut Session, args: &str) -> Result<String, String> {
    let (sub, rest) = args.split_once(' ').unwrap_or((args, ""));
    let rest = rest.trim();
    match sub {
        "pop" => {
            let n = if rest.is_empty() {
                Ok(1)
            } else {
                rest.parse::<usize>()
            };
            match n {
                Ok(n) => Ok(format!("removed {} items", session.pop(n))),
                Err(_) => Err("usage: /context pop [N]".into()),
            }
        }
        "checkpoint" if !rest.is_empty() => {
            session.checkpoint(rest);
            Ok(format!("checkpoint `{rest}` saved"))
        }
        "rollback" if !rest.is_empty() => match session.rollback(rest) {
            Ok(()) => Ok(format!(
                "rolled back to `{rest}` ({} items)",
                session.history().len()
            )),
            Err(e) => Err(e.to_string()),
        },
        "reset" => {
            session.reset();
            Ok("context reset to the initial context".into())
        }
        "summarize" => match session.summarize().await {
            Ok(()) => Ok(format!(
                "history replaced by a summary ({} items)",
                session.history().len()
            )),
            Err(e) => Err(e.to_string()),
        },
        _ => Err(CONTEXT_USAGE.into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn builtin(name: &'static str) -> Builtin<()> {
        Builtin {
            name,
            usage: "",
            help: "h",
            run: (),
        }
    }

    #[test]
    fn user_commands_shadow_builtins_which_stay_reachable() {
        let dir = tempfile::tempdir().unwrap();
        let cmds = dir.path().join("home/commands");
        std::fs::create_dir_all(&cmds).unwrap();
        std::fs::write(cmds.join("review.md"), "Review $ARGUMENTS carefully.").unwrap();
        std::fs::write(cmds.join("status.md"), "# Git status\nShow git status.").unwrap();
        std::fs::write(cmds.join("help.md"), "nope").unwrap();
        let builtins = vec![builtin("help"), builtin("status")];
        let (reg, problems) = Registry::load(builtins, dir.path(), &dir.path().join("home"), false);
        assert!(problems[0].contains("/help is reserved"), "{problems:?}");
        match reg.find("review") {
            Some(Found::User(c)) => assert_eq!(c.expand("src/a.rs"), "Review src/a.rs carefully."),
            _ => panic!("review is a user command"),
        }
        assert!(matches!(reg.find("status"), Some(Found::User(_))));
        assert!(matches!(reg.find("cogni:status"), Some(Found::Builtin(b)) if b.name == "status"));
        assert!(matches!(reg.find("help"), Some(Found::Builtin(_))));
        assert!(reg.find("nope").is_none());
        assert_eq!(reg.builtin_name(&reg.builtins()[1]), "cogni:status");
        let help = reg.help_lines().join("\n");
        assert!(
            help.contains("/cogni:status") && help.contains("/status [ARGS]"),
            "{help}"
        );
        assert!(reg.completion_names().contains(&"/review".to_string()));
        match reg.find("status") {
            Some(Found::User(c)) => {
                assert_eq!(c.expand("now"), "# Git status\nShow git status.\n\nnow")
            }
            _ => unreachable!(),
        }
    }

    #[test]
    fn project_commands_wait_for_trust_and_never_shadow_a_builtin_or_yours() {
        let dir = tempfile::tempdir().unwrap();
        let home = dir.path().join("home");
        let project = dir.path().join(".cogni/commands");
        std::fs::create_dir_all(&project).unwrap();
        std::fs::create_dir_all(home.join("commands")).unwrap();
        std::fs::write(project.join("mode.md"), "Run the attacker's plan.").unwrap();
        std::fs::write(project.join("exit.md"), "x").unwrap();
        std::fs::write(project.join("deploy.md"), "Deploy.").unwrap();
        std::fs::write(project.join("review.md"), "Their review.").unwrap();
        std::fs::write(home.join("commands/review.md"), "My review.").unwrap();
        let builtins = || vec![builtin("mode"), builtin("exit")];

        let (reg, problems) = Registry::load(builtins(), dir.path(), &home, false);
        assert!(matches!(reg.find("mode"), Some(Found::Builtin(_))));
        assert!(reg.find("deploy").is_none() && reg.find("project:mode").is_none());
        assert_eq!(problems.len(), 1, "{problems:?}");
        assert!(
            problems[0].contains("not trusted") && problems[0].contains("4 commands"),
            "{problems:?}"
        );

        let (reg, problems) = Registry::load(builtins(), dir.path(), &home, true);
        assert!(matches!(reg.find("mode"), Some(Found::Builtin(_))));
        assert!(matches!(reg.find("exit"), Some(Found::Builtin(_))));
        assert!(matches!(reg.find("deploy"), Some(Found::User(_))));
        let expand = |name| match reg.find(name) {
            Some(Found::User(c)) => c.expand(""),
            _ => panic!("/{name} is not a command"),
        };
        assert_eq!(expand("project:mode"), "Run the attacker's plan.");
        assert_eq!(expand("review"), "My review.");
        assert_eq!(expand("project:review"), "Their review.");
        assert_eq!(expand("project:exit"), "x");
        assert_eq!(reg.builtin_name(&reg.builtins()[0]), "mode");
        assert_eq!(problems.len(), 3, "{problems:?}");
    }

    #[test]
    fn claude_code_commands_load_with_their_front_matter_and_positional_arguments() {
        let dir = tempfile::tempdir().unwrap();
        let home = dir.path().join("home");
        let claude = dir.path().join(".claude/commands");
        let cogni = dir.path().join(".cogni/commands");
        std::fs::create_dir_all(&claude).unwrap();
        std::fs::create_dir_all(&cogni).unwrap();
        std::fs::write(
            claude.join("fix-issue.md"),
            "---\ndescription: Fix a GitHub issue\nargument-hint: [number] [priority]\nallowed-tools: Bash(git add:*)\nmodel: claude-3-5-haiku\n---\nFix issue #$1 with priority $2 ($ARGUMENTS); not $10.\n",
        )
        .unwrap();
        std::fs::write(claude.join("plain.md"), "Review the diff.").unwrap();
        std::fs::write(claude.join("deploy.md"), "Theirs.").unwrap();
        std::fs::write(cogni.join("deploy.md"), "Ours.").unwrap();
        std::fs::write(
            claude.join("broken.md"),
            "---\ndescription: never closed\nx",
        )
        .unwrap();

        let (reg, problems) = Registry::load(vec![builtin("mode")], dir.path(), &home, false);
        assert!(reg.find("fix-issue").is_none(), "untrusted: not loaded");
        assert!(problems[0].contains("not trusted"), "{problems:?}");

        let (reg, problems) = Registry::load(vec![builtin("mode")], dir.path(), &home, true);
        let Some(Found::User(fix)) = reg.find("fix-issue") else {
            panic!("/fix-issue is not a command")
        };
        assert_eq!(
            fix.expand("123 high"),
            "Fix issue #123 with priority high (123 high); not $10.\n",
            "front matter left out, $1 $2 and $ARGUMENTS replaced"
        );
        assert!(
            fix.summary().starts_with("Fix a GitHub issue  ["),
            "{}",
            fix.summary()
        );
        let Some(Found::User(plain)) = reg.find("plain") else {
            panic!("/plain is not a command")
        };
        assert_eq!(plain.expand("src/"), "Review the diff.\n\nsrc/");
        let Some(Found::User(deploy)) = reg.find("deploy") else {
            panic!("/deploy is not a command")
        };
        assert_eq!(deploy.expand(""), "Ours.", ".cogni/commands wins");
        assert!(reg.find("broken").is_none());
        assert!(
            problems
                .iter()
                .any(|p| p.contains("broken.md") && p.contains("ignored")),
            "{problems:?}"
        );
        assert!(
            problems
                .iter()
                .any(|p| p.contains("deploy.md") && p.contains(".cogni/commands")),
            "{problems:?}"
        );
    }

    #[test]
    fn commands_split_into_name_and_arguments() {
        assert_eq!(split("/mode  plan "), Some(("mode", "plan")));
        assert_eq!(split("/help"), Some(("help", "")));
        assert_eq!(split("hello"), None);
    }
}
