//! The system prompt as named sections, in a fixed order, each present only
//! when it has content (see docs/prompt.md):
//!
//! 1. identity: `base_instructions` from config, else `$COGNI_HOME/SOUL.md`,
//!    else the model family's template; a project's `.cogni/SOUL.md`
//!    appended (or replacing it); the apply_patch instructions when the
//!    family needs them and no `apply_patch` tool is offered;
//! 2. tools: one line per tool, for families that read tools from the prompt;
//! 3. skills: the listing of names and descriptions (docs/skills.md);
//! 4. model aliases, when more than one is configured;
//! 5. workspace: the working directory and the git repository root;
//! 6. sandbox: mode, writable roots, protected paths, network;
//! 7. finishing: the test command and the done token, when set;
//! 8. runtime: model, provider, time zone, today's date (never a clock
//!    time, the OS, the architecture or interpreter versions);
//! 9. memory.
//!
//! Everything here is pure: the same inputs give the same bytes, which is
//! what keeps the provider's prompt cache warm.

use super::clock::Today;
use cogni_protocol::{SandboxMode, SandboxPolicy, ToolSpec};
use cogni_tools::apply_patch::APPLY_PATCH_INSTRUCTIONS;
use cogni_tools::paths::{PROTECTED_DIRS, PROTECTED_FILES};
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;

/// The sections' names, in the order they appear.
pub const SECTION_ORDER: [&str; 9] = [
    "identity",
    "tools",
    "skills",
    "model_aliases",
    "workspace",
    "sandbox",
    "finishing",
    "runtime",
    "memory",
];

/// A project's `.cogni/SOUL.md`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProjectSoul {
    /// The body (front matter removed).
    pub text: String,
    /// `replace = true` in its front matter: it replaces the identity
    /// instead of extending it.
    pub replace: bool,
}

/// What the identity section is made of.
#[derive(Debug, Clone, Copy)]
pub struct Identity<'a> {
    /// `base_instructions` / `base_instructions_file` from config.
    pub base_instructions: Option<&'a str>,
    /// `$COGNI_HOME/SOUL.md`.
    pub soul: Option<&'a str>,
    /// The model family's template.
    pub family_template: &'a str,
    /// The project's `.cogni/SOUL.md`.
    pub project_soul: Option<&'a ProjectSoul>,
    /// Append the apply_patch instructions.
    pub apply_patch_instructions: bool,
}

/// Every input of the system prompt.
#[derive(Debug, Clone, Copy)]
pub struct SystemPromptBuilder<'a> {
    /// The identity section's inputs.
    pub identity: Identity<'a>,
    /// `Some` when the model family reads its tools from the prompt.
    pub tools: Option<&'a [ToolSpec]>,
    /// The skills' listing, `- name: description` lines (docs/skills.md).
    pub skills: Option<&'a str>,
    /// `[model_aliases]`, alias -> model (a section only with two or
    /// more).
    pub model_aliases: &'a BTreeMap<String, String>,
    /// The working directory (the workspace section).
    pub cwd: &'a Path,
    /// The root of the git repository `cwd` is in, if it is in one.
    pub repo_root: Option<&'a Path>,
    /// The sandbox policy the sandbox section describes (relative
    /// writable roots are taken from `cwd`).
    pub sandbox: &'a SandboxPolicy,
    /// The model's name (the runtime section).
    pub model: &'a str,
    /// The provider's id (the runtime section).
    pub provider: &'a str,
    /// The date and time zone the runtime section shows.
    pub today: &'a Today,
    /// The memory notes shown (docs/memory.md); none: no section.
    pub memory: Option<&'a str>,
    /// `[agent] done_token`.
    pub done_token: Option<&'a str>,
    /// `[agent] test_command` (with `enable_test_run`).
    pub test_command: Option<&'a str>,
}

impl SystemPromptBuilder<'_> {
    /// The sections that have content, as (name, text), in [`SECTION_ORDER`].
    pub fn sections(&self) -> Vec<(&'static str, String)> {
        let [id, tl, sk, al, ws, sb, fin, rt, mm] = SECTION_ORDER;
        [
            (id, identity(&self.identity)),
            (tl, self.tools.and_then(tools)),
            (sk, skills(self.skills)),
            (al, model_aliases(self.model_aliases)),
            (ws, workspace(self.cwd, self.repo_root)),
            (sb, sandbox(self.cwd, self.sandbox)),
            (fin, finishing(self.done_token, self.test_command)),
            (rt, runtime(self.model, self.provider, self.today)),
            (mm, memory(self.memory)),
        ]
        .into_iter()
        .filter_map(|(name, text)| Some((name, text?.trim_end().to_string())))
        .collect()
    }

    /// The whole system prompt: the sections separated by blank lines.
    pub fn build(&self) -> String {
        self.sections()
            .into_iter()
            .map(|(_, text)| text)
            .collect::<Vec<_>>()
            .join("\n\n")
    }
}

fn non_blank(s: Option<&str>) -> Option<&str> {
    s.map(str::trim_end).filter(|s| !s.trim().is_empty())
}

/// Who the model is: config's `base_instructions`, else the global
/// SOUL.md, else the family's template; then the project's SOUL.md
/// (appended, or instead when it says `replace = true`); then the
/// apply_patch instructions when needed.
pub fn identity(i: &Identity<'_>) -> Option<String> {
    let base = non_blank(i.base_instructions)
        .or(non_blank(i.soul))
        .or(non_blank(Some(i.family_template)));
    let project = i
        .project_soul
        .and_then(|p| Some((non_blank(Some(&p.text))?, p.replace)));
    let mut text = match (base, project) {
        (_, Some((project, true))) => project.to_string(),
        (Some(base), Some((project, false))) => format!("{base}\n\n{project}"),
        (None, Some((project, false))) => project.to_string(),
        (Some(base), None) => base.to_string(),
        (None, None) => String::new(),
    };
    if i.apply_patch_instructions {
        text = format!("{text}\n{APPLY_PATCH_INSTRUCTIONS}");
    }
    (!text.trim().is_empty()).then_some(text)
}

/// The first sentence of a tool's description: its first line, up to the
/// first full stop followed by a space.
pub fn first_sentence(description: &str) -> &str {
    let line = description.trim().lines().next().unwrap_or("").trim();
    match line.find(". ") {
        Some(i) => &line[..=i],
        None => line,
    }
}

/// `# Available tools`, one line per tool.
pub fn tools(tools: &[ToolSpec]) -> Option<String> {
    if tools.is_empty() {
        return None;
    }
    let mut out = String::from("# Available tools");
    for tool in tools {
        let summary = first_sentence(&tool.description);
        if summary.is_empty() {
            let _ = write!(out, "\n- {}", tool.name);
        } else {
            let _ = write!(out, "\n- {}: {summary}", tool.name);
        }
    }
    Some(out)
}

/// `# Skills`: how skills are loaded, then the listing (one line per
/// skill, chosen within its budget when the session started).
pub fn skills(listing: Option<&str>) -> Option<String> {
    non_blank(listing).map(|l| {
        format!(
            "# Skills\nSkills are procedures for particular tasks. When one fits the task, load it with the `{}` tool before you start and follow it (a skill the user names as $NAME is loaded already).\n{}",
            cogni_tools::skills::SKILL_TOOL,
            l.trim_start()
        )
    })
}

/// `# Model aliases`, only when more than one is configured.
pub fn model_aliases(aliases: &BTreeMap<String, String>) -> Option<String> {
    if aliases.len() < 2 {
        return None;
    }
    let mut out = String::from("# Model aliases\nThese names stand for these models:");
    for (alias, model) in aliases {
        let _ = write!(out, "\n- {alias}: {model}");
    }
    Some(out)
}

/// `# Workspace`: the working directory and the git repository root.
pub fn workspace(cwd: &Path, repo_root: Option<&Path>) -> Option<String> {
    let mut out = format!("# Workspace\nWorking directory: {}", cwd.display());
    if let Some(root) = repo_root {
        let _ = write!(out, "\nGit repository root: {}", root.display());
    }
    Some(out)
}

/// `# Sandbox`: what the mode allows, where writes may go, what stays
/// read-only and whether there is a network.
pub fn sandbox(cwd: &Path, policy: &SandboxPolicy) -> Option<String> {
    let mut out = format!("# Sandbox\nMode: {}. ", policy.mode.as_str());
    let network = match policy.mode {
        SandboxMode::ReadOnly => {
            out.push_str(
                "Nothing in the workspace may be written: file tools refuse writes, and commands run confined by the kernel with only a private temporary directory writable.",
            );
            policy.network_access
        }
        SandboxMode::WorkspaceWrite => {
            out.push_str(
                "File tools and commands (confined by the kernel) may write only under the writable roots, plus a private temporary directory for commands.",
            );
            let roots: Vec<String> = std::iter::once(cwd.to_path_buf())
                .chain(policy.writable_roots.iter().map(|r| cwd.join(r)))
                .map(|p| p.display().to_string())
                .collect();
            let _ = write!(out, "\nWritable roots: {}", roots.join(", "));
            let _ = write!(
                out,
                "\nProtected (read-only even under a writable root): {} (directories, with everything in them), {} (files, wherever they are).",
                PROTECTED_DIRS.join(", "),
                PROTECTED_FILES.join(", ")
            );
            policy.network_access
        }
        SandboxMode::DangerFullAccess => {
            out.push_str(
                "There is no sandbox: commands run with the user's own permissions and network, nothing is protected, and a mistake can damage the user's machine. Be careful with commands that delete or overwrite.",
            );
            true
        }
    };
    let _ = write!(out, "\nNetwork: {}", if network { "on" } else { "off" });
    Some(out)
}

/// `# Finishing` (only with a done token or a test command): how the
/// model says it is done, and what runs when it is.
pub fn finishing(done_token: Option<&str>, test_command: Option<&str>) -> Option<String> {
    let done_token = non_blank(done_token);
    let test_command = non_blank(test_command);
    if done_token.is_none() && test_command.is_none() {
        return None;
    }
    let mut out = String::from("# Finishing");
    if let Some(command) = test_command {
        let _ = write!(
            out,
            "\nWhen you are done, `{command}` runs in the workspace. If tests fail, you get the failures and continue until they pass."
        );
    }
    if let Some(token) = done_token {
        let _ = write!(
            out,
            "\nWhen the task is complete, end your final reply with {token}."
        );
    }
    Some(out)
}

/// `# Runtime`: model, provider, time zone and today's date.
pub fn runtime(model: &str, provider: &str, today: &Today) -> Option<String> {
    Some(format!(
        "# Runtime\nModel: {model} (provider: {provider})\nTime zone: {}\nToday's date: {}",
        today.timezone, today.date
    ))
}

/// `# Memory` (empty until a memory strategy provides it).
pub fn memory(memory: Option<&str>) -> Option<String> {
    non_blank(memory).map(|m| format!("# Memory\n{}", m.trim_start()))
}

#[cfg(test)]
mod tests {
    use super::super::tests::tool;
    use super::*;
    use std::path::PathBuf;

    fn identity_of(
        base: Option<&str>,
        soul: Option<&str>,
        project: Option<&ProjectSoul>,
    ) -> Option<String> {
        identity(&Identity {
            base_instructions: base,
            soul,
            family_template: "TEMPLATE",
            project_soul: project,
            apply_patch_instructions: false,
        })
    }

    #[test]
    fn identity_prefers_config_then_soul_then_the_family_template() {
        assert_eq!(
            identity_of(Some("CONFIG"), Some("SOUL"), None).as_deref(),
            Some("CONFIG")
        );
        assert_eq!(
            identity_of(None, Some("SOUL\n"), None).as_deref(),
            Some("SOUL")
        );
        assert_eq!(identity_of(None, None, None).as_deref(), Some("TEMPLATE"));
        // A blank SOUL.md is no SOUL.md.
        assert_eq!(
            identity_of(None, Some("  \n"), None).as_deref(),
            Some("TEMPLATE")
        );
    }

    #[test]
    fn a_project_soul_extends_or_replaces_the_identity() {
        let extend = ProjectSoul {
            text: "PROJECT".into(),
            replace: false,
        };
        let replace = ProjectSoul {
            text: "PROJECT".into(),
            replace: true,
        };
        assert_eq!(
            identity_of(None, Some("SOUL"), Some(&extend)).as_deref(),
            Some("SOUL\n\nPROJECT")
        );
        assert_eq!(
            identity_of(None, None, Some(&extend)).as_deref(),
            Some("TEMPLATE\n\nPROJECT")
        );
        assert_eq!(
            identity_of(Some("CONFIG"), Some("SOUL"), Some(&replace)).as_deref(),
            Some("PROJECT")
        );
        let blank = ProjectSoul {
            text: "\n".into(),
            replace: true,
        };
        assert_eq!(
            identity_of(None, None, Some(&blank)).as_deref(),
            Some("TEMPLATE"),
            "an empty project SOUL.md replaces nothing"
        );
    }

    #[test]
    fn identity_carries_the_apply_patch_instructions_when_asked() {
        let text = identity(&Identity {
            base_instructions: Some("base"),
            soul: None,
            family_template: "T",
            project_soul: None,
            apply_patch_instructions: true,
        })
        .unwrap();
        assert_eq!(text, format!("base\n{APPLY_PATCH_INSTRUCTIONS}"));
        assert!(text.contains("apply_patch <<'EOF'"));
    }

    #[test]
    fn tools_section_lists_each_tool_with_its_first_sentence() {
        assert_eq!(tools(&[]), None);
        let text = tools(&[
            tool("shell", "Run a command. Output is capped.\nMore."),
            tool("read_file", "Read a text file (line numbers, ranges)"),
            tool("odd", ""),
        ])
        .unwrap();
        assert_eq!(
            text,
            "# Available tools\n- shell: Run a command.\n- read_file: Read a text file (line numbers, ranges)\n- odd"
        );
        assert_eq!(first_sentence("Use v1.2 of x. Then y."), "Use v1.2 of x.");
        assert_eq!(first_sentence("\n  One line\nTwo"), "One line");
    }

    #[test]
    fn skills_section_renders_only_with_skills() {
        assert_eq!(skills(None), None);
        assert_eq!(skills(Some("")), None);
        let text = skills(Some("- pdf: Fill PDF forms. Needs poppler.\n- release\n")).unwrap();
        assert!(
            text.starts_with("# Skills\nSkills are procedures"),
            "{text}"
        );
        assert!(
            text.ends_with("loaded already).\n- pdf: Fill PDF forms. Needs poppler.\n- release"),
            "{text}"
        );
    }

    #[test]
    fn aliases_section_needs_more_than_one_alias() {
        let mut aliases = BTreeMap::new();
        assert_eq!(model_aliases(&aliases), None);
        aliases.insert("fast".to_string(), "gpt-4.1-mini".to_string());
        assert_eq!(model_aliases(&aliases), None, "one alias is not listed");
        aliases.insert("deep".to_string(), "o3".to_string());
        assert_eq!(
            model_aliases(&aliases).unwrap(),
            "# Model aliases\nThese names stand for these models:\n- deep: o3\n- fast: gpt-4.1-mini"
        );
    }

    #[test]
    fn workspace_section_names_the_repository_root_when_there_is_one() {
        let cwd = Path::new("/work/repo/sub");
        assert_eq!(
            workspace(cwd, None).unwrap(),
            "# Workspace\nWorking directory: /work/repo/sub"
        );
        assert_eq!(
            workspace(cwd, Some(Path::new("/work/repo"))).unwrap(),
            "# Workspace\nWorking directory: /work/repo/sub\nGit repository root: /work/repo"
        );
    }

    fn policy(mode: SandboxMode, network: bool, roots: &[&str]) -> SandboxPolicy {
        SandboxPolicy {
            mode,
            network_access: network,
            writable_roots: roots.iter().map(PathBuf::from).collect(),
            ..SandboxPolicy::default()
        }
    }

    #[cfg(unix)]
    #[test]
    fn sandbox_section_describes_each_mode() {
        let cwd = Path::new("/w");
        let ww = sandbox(
            cwd,
            &policy(SandboxMode::WorkspaceWrite, false, &["/tmp/x", "rel"]),
        )
        .unwrap();
        assert!(ww.starts_with("# Sandbox\nMode: workspace-write. "), "{ww}");
        assert!(
            ww.contains("\nWritable roots: /w, /tmp/x, /w/rel\n"),
            "{ww}"
        );
        assert!(
            ww.contains(": .git, .cogni, .claude (directories, with everything in them), cogni.toml, AGENTS.md, CLAUDE.md (files"),
            "{ww}"
        );
        assert!(ww.ends_with("\nNetwork: off"), "{ww}");
        let ww_net = sandbox(cwd, &policy(SandboxMode::WorkspaceWrite, true, &[])).unwrap();
        assert!(ww_net.ends_with("\nNetwork: on"), "{ww_net}");
        assert!(ww_net.contains("\nWritable roots: /w\n"), "{ww_net}");

        let ro = sandbox(cwd, &policy(SandboxMode::ReadOnly, false, &["/tmp/x"])).unwrap();
        assert!(ro.contains("Mode: read-only. Nothing in the workspace may be written"));
        assert!(!ro.contains("Writable roots"), "{ro}");
        assert!(!ro.contains("Protected"), "{ro}");
        assert!(ro.ends_with("\nNetwork: off"), "{ro}");

        let full = sandbox(cwd, &policy(SandboxMode::DangerFullAccess, false, &[])).unwrap();
        assert!(
            full.contains("Mode: danger-full-access. There is no sandbox"),
            "{full}"
        );
        assert!(full.contains("nothing is protected"), "{full}");
        assert!(full.ends_with("\nNetwork: on"), "unconfined: {full}");
    }

    #[test]
    fn runtime_section_has_the_date_but_no_time_or_host_details() {
        let text = runtime(
            "gpt-4.1",
            "openai",
            &Today::new("2025-03-09", "CET (UTC+01:00)"),
        )
        .unwrap();
        assert_eq!(
            text,
            "# Runtime\nModel: gpt-4.1 (provider: openai)\nTime zone: CET (UTC+01:00)\nToday's date: 2025-03-09"
        );
        for host in [
            std::env::consts::OS,
            std::env::consts::ARCH,
            "rustc",
            "python",
        ] {
            assert!(!text.to_lowercase().contains(host), "{host} in {text}");
        }
    }

    #[test]
    fn memory_section_renders_only_with_content() {
        assert_eq!(memory(None), None);
        assert_eq!(memory(Some(" \n")), None);
        assert_eq!(
            memory(Some("- the user prefers tabs\n")).unwrap(),
            "# Memory\n- the user prefers tabs"
        );
    }
}
