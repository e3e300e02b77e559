//! `[[hooks.EVENT]]` tables: parsed and checked, every problem an error
//! naming its key path (`hooks.PreToolUse[0].matcher: not a valid regex`).
//! The engine runs them (`agent::effects::hooks`; see docs/hooks.md).
//!
//! ```toml
//! [[hooks.PreToolUse]]
//! matcher = "shell|apply_patch"    # regex over the whole tool name
//! command = "./scripts/check-call"
//! timeout_ms = 5000                # default 60 s
//! on_failure = "allow"             # or "block": a hook that exits 1 (3, ...) blocks
//! ```

use regex::Regex;
use std::time::Duration;

/// The events a hook may be bound to, in lifecycle order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum HookEvent {
    /// A session starts or is resumed (matcher: `startup` or `resume`).
    SessionStart,
    /// The user sent a prompt, before the model sees it.
    UserPromptSubmit,
    /// A tool call is about to run (matcher: the tool name); the hook may block
    /// it or change its input.
    PreToolUse,
    /// A tool call finished (matcher: the tool name).
    PostToolUse,
    /// History is about to be compacted (matcher: `manual` or `auto`).
    PreCompact,
    /// The model answered without asking for tools: the turn is about to end.
    Stop,
    /// The session ends (matcher: the reason).
    SessionEnd,
    /// A delegated agent starts (its session's start).
    SubagentStart,
    /// A delegated agent is about to finish (its turn's end).
    SubagentStop,
    /// cogni wants the user's attention (matcher: `permission_prompt` when
    /// an approval question waits, `idle_prompt` when the REPL waits for
    /// input after a turn). It cannot block anything.
    Notification,
}

impl HookEvent {
    /// Every event, in lifecycle order.
    pub const ALL: [HookEvent; 10] = [
        HookEvent::SessionStart,
        HookEvent::UserPromptSubmit,
        HookEvent::PreToolUse,
        HookEvent::PostToolUse,
        HookEvent::PreCompact,
        HookEvent::Stop,
        HookEvent::SessionEnd,
        HookEvent::SubagentStart,
        HookEvent::SubagentStop,
        HookEvent::Notification,
    ];

    /// The name in config and in the hook's JSON (Claude Code's).
    pub fn name(self) -> &'static str {
        match self {
            HookEvent::SessionStart => "SessionStart",
            HookEvent::UserPromptSubmit => "UserPromptSubmit",
            HookEvent::PreToolUse => "PreToolUse",
            HookEvent::PostToolUse => "PostToolUse",
            HookEvent::PreCompact => "PreCompact",
            HookEvent::Stop => "Stop",
            HookEvent::SessionEnd => "SessionEnd",
            HookEvent::SubagentStart => "SubagentStart",
            HookEvent::SubagentStop => "SubagentStop",
            HookEvent::Notification => "Notification",
        }
    }

    /// The event named `name` in config (`PreToolUse`, ...); `None` for an
    /// unknown name.
    pub fn parse(name: &str) -> Option<HookEvent> {
        HookEvent::ALL.into_iter().find(|e| e.name() == name)
    }

    /// What a matcher is matched against, for events that have one.
    pub fn matcher_subject(self) -> Option<&'static str> {
        match self {
            HookEvent::PreToolUse | HookEvent::PostToolUse => Some("tool name"),
            HookEvent::SessionStart => Some("source: startup or resume"),
            HookEvent::PreCompact => Some("trigger: manual or auto"),
            HookEvent::SessionEnd => Some("reason"),
            HookEvent::SubagentStart | HookEvent::SubagentStop => Some("agent name"),
            HookEvent::Notification => Some("notification_type: permission_prompt or idle_prompt"),
            HookEvent::UserPromptSubmit | HookEvent::Stop => None,
        }
    }

    /// The events of a delegated agent's session (the others fire in the
    /// root agent's, except tool and prompt events, which fire in both).
    pub fn in_delegated(self, delegated: bool) -> bool {
        match self {
            HookEvent::SubagentStart | HookEvent::SubagentStop => delegated,
            HookEvent::SessionStart | HookEvent::Stop | HookEvent::SessionEnd => !delegated,
            _ => true,
        }
    }

    /// Plain stdout (not JSON) is context for the model (Claude Code's rule).
    pub fn plain_stdout_is_context(self) -> bool {
        matches!(self, HookEvent::SessionStart | HookEvent::UserPromptSubmit)
    }
}

/// Default time a hook may take before it is killed.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(60);

/// What a hook that fails (exits with anything but 0, 2, 126 or 127)
/// means. A hook that gives no answer at all (cannot start, times out,
/// dies by a signal, prints JSON that cannot be read) blocks either way.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum OnFailure {
    /// Reported; things go on as if it had not run.
    #[default]
    Allow,
    /// Treated like a block (exit 2), with a fixed reason.
    Block,
}

/// One configured hook, checked.
#[derive(Debug, Clone, PartialEq)]
pub struct HookSpec {
    /// The event it is bound to (the `[hooks.EVENT]` key).
    pub event: HookEvent,
    /// A regex over the whole subject (the tool name, the session start's
    /// source, ...); `None` runs at every one.
    pub matcher: Option<String>,
    /// Run with `sh -c` in the session's directory.
    pub command: String,
    /// How long it may run before it is killed with everything it started
    /// (`timeout`, default [`DEFAULT_TIMEOUT`]).
    pub timeout: Duration,
    /// What its failure means (`on_failure`).
    pub on_failure: OnFailure,
}

impl HookSpec {
    /// The matcher as it runs: anchored, so `shell` does not match
    /// `shell_kill`. Checked when parsed.
    pub fn regex(&self) -> Option<Regex> {
        self.matcher
            .as_deref()
            .and_then(|m| Regex::new(&format!("^(?:{m})$")).ok())
    }
}

const FIELDS: &str = "matcher, command, timeout_ms, on_failure";

/// Parse the `hooks` table found at `path` (`hooks`).
pub fn parse(value: &toml::Value, path: &str) -> Result<Vec<HookSpec>, String> {
    let table = value
        .as_table()
        .ok_or_else(|| format!("{path}: expected a table of events, like [[{path}.PreToolUse]]"))?;
    let mut specs = Vec::new();
    for (name, entries) in table {
        let at = format!("{path}.{name}");
        let event = HookEvent::parse(name).ok_or_else(|| unknown_event(name, &at))?;
        let entries = entries.as_array().ok_or_else(|| {
            format!("{at}: expected an array of tables: write each hook as [[{at}]]")
        })?;
        for (i, entry) in entries.iter().enumerate() {
            specs.push(parse_one(event, entry, &format!("{at}[{i}]"))?);
        }
    }
    // Events in their lifecycle order; each event's hooks in config order.
    specs.sort_by_key(|s| s.event);
    Ok(specs)
}

fn unknown_event(name: &str, at: &str) -> String {
    let known = HookEvent::ALL
        .iter()
        .map(|e| e.name())
        .collect::<Vec<_>>()
        .join(", ");
    format!("{at}: unknown hook event `{name}`; known events: {known}")
}

fn parse_one(event: HookEvent, value: &toml::Value, at: &str) -> Result<HookSpec, String> {
    let table = value
        .as_table()
        .ok_or_else(|| format!("{at}: expected a table with `command`"))?;
    let string = |key: &str| -> Result<Option<&str>, String> {
        match table.get(key) {
            None => Ok(None),
            Some(toml::Value::String(s)) => Ok(Some(s.as_str())),
            Some(_) => Err(format!("{at}.{key}: expected a string")),
        }
    };
    for key in table.keys() {
        match key.as_str() {
            "matcher" | "command" | "timeout_ms" | "on_failure" => {}
            "hooks" | "type" => {
                return Err(format!(
                    "{at}.{key}: cogni's hooks are flat: put `command` (and `timeout_ms`) \
                     in the [[{}]] table itself (see docs/hooks.md, porting from Claude Code)",
                    at.rsplit_once('[').map_or(at, |(table, _)| table)
                ))
            }
            "timeout" => return Err(format!("{at}.timeout: write timeout_ms, in milliseconds")),
            other => {
                return Err(format!(
                    "{at}.{other}: unknown field; expected one of {FIELDS}"
                ))
            }
        }
    }
    let command = match string("command")? {
        Some(c) if !c.trim().is_empty() => c.to_string(),
        Some(_) => return Err(format!("{at}.command: is empty")),
        None => return Err(format!("{at}: missing `command`")),
    };
    let matcher = match string("matcher")? {
        // Claude Code's spellings of "every one".
        None | Some("" | "*") => None,
        Some(m) => {
            let Some(subject) = event.matcher_subject() else {
                return Err(format!(
                    "{at}.matcher: {} hooks have no matcher; remove it",
                    event.name()
                ));
            };
            Regex::new(&format!("^(?:{m})$")).map_err(|e| {
                format!("{at}.matcher: not a valid regex (over the {subject}): {e}")
            })?;
            Some(m.to_string())
        }
    };
    let timeout = match table.get("timeout_ms") {
        None => DEFAULT_TIMEOUT,
        Some(toml::Value::Integer(ms)) if *ms > 0 => Duration::from_millis(*ms as u64),
        Some(toml::Value::Integer(_)) => {
            return Err(format!("{at}.timeout_ms: must be greater than 0"))
        }
        Some(_) => {
            return Err(format!(
                "{at}.timeout_ms: expected a number of milliseconds"
            ))
        }
    };
    let on_failure = match string("on_failure")? {
        None | Some("allow") => OnFailure::Allow,
        Some("block") => OnFailure::Block,
        Some(other) => {
            return Err(format!(
                "{at}.on_failure: `{other}` is not \"allow\" or \"block\""
            ))
        }
    };
    Ok(HookSpec {
        event,
        matcher,
        command,
        timeout,
        on_failure,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse_text(text: &str) -> Result<Vec<HookSpec>, String> {
        let doc: toml::Table = toml::from_str(text).unwrap();
        parse(&doc["hooks"], "hooks")
    }

    #[test]
    fn every_event_parses_in_lifecycle_order_and_config_order() {
        let specs = parse_text(
            r#"
            [[hooks.SessionEnd]]
            command = "end"
            [[hooks.PreToolUse]]
            matcher = "shell|apply_patch"
            command = "first"
            timeout_ms = 1500
            on_failure = "block"
            [[hooks.PreToolUse]]
            matcher = "*"
            command = "second"
            [[hooks.SessionStart]]
            matcher = "resume"
            command = "start"
            [[hooks.UserPromptSubmit]]
            command = "prompt"
            [[hooks.PostToolUse]]
            command = "post"
            [[hooks.PreCompact]]
            matcher = "manual"
            command = "compact"
            [[hooks.Stop]]
            command = "stop"
            [[hooks.Notification]]
            matcher = "permission_prompt"
            command = "ping"
            "#,
        )
        .unwrap();
        let order: Vec<(&str, &str)> = specs
            .iter()
            .map(|s| (s.event.name(), s.command.as_str()))
            .collect();
        assert_eq!(
            order,
            [
                ("SessionStart", "start"),
                ("UserPromptSubmit", "prompt"),
                ("PreToolUse", "first"),
                ("PreToolUse", "second"),
                ("PostToolUse", "post"),
                ("PreCompact", "compact"),
                ("Stop", "stop"),
                ("SessionEnd", "end"),
                ("Notification", "ping"),
            ]
        );
        assert_eq!(
            specs[2],
            HookSpec {
                event: HookEvent::PreToolUse,
                matcher: Some("shell|apply_patch".into()),
                command: "first".into(),
                timeout: Duration::from_millis(1500),
                on_failure: OnFailure::Block,
            }
        );
        assert_eq!(specs[3].matcher, None, "`*` matches everything");
        assert_eq!(specs[3].timeout, DEFAULT_TIMEOUT);
        assert_eq!(specs[3].on_failure, OnFailure::Allow);
    }

    #[test]
    fn matchers_match_whole_names() {
        let spec = |m: &str| HookSpec {
            event: HookEvent::PreToolUse,
            matcher: Some(m.into()),
            command: "x".into(),
            timeout: DEFAULT_TIMEOUT,
            on_failure: OnFailure::Allow,
        };
        let re = spec("shell|apply_patch").regex().unwrap();
        assert!(re.is_match("shell"));
        assert!(re.is_match("apply_patch"));
        assert!(!re.is_match("shell_kill"), "a prefix is not a match");
        assert!(!re.is_match("my_shell"));
        let re = spec("mcp__.*").regex().unwrap();
        assert!(re.is_match("mcp__github__create_issue"));
        assert!(!re.is_match("read_file"));
        let re = spec("(read|write)_file").regex().unwrap();
        assert!(re.is_match("read_file") && re.is_match("write_file"));
    }

    #[test]
    fn problems_name_the_key_path() {
        let cases = [
            (
                "[[hooks.PreToolUse]]\nmatcher = \"(\"\ncommand = \"x\"",
                "hooks.PreToolUse[0].matcher: not a valid regex",
            ),
            (
                "[[hooks.PreToolUs]]\ncommand = \"x\"",
                "hooks.PreToolUs: unknown hook event `PreToolUs`; known events: SessionStart, UserPromptSubmit, PreToolUse",
            ),
            (
                "[[hooks.Stop]]\ncommand = \"a\"\n[[hooks.Stop]]\ncommand = \"b\"\nmatcher = \"x\"",
                "hooks.Stop[1].matcher: Stop hooks have no matcher",
            ),
            (
                "[[hooks.PostToolUse]]\nmatcher = \"shell\"",
                "hooks.PostToolUse[0]: missing `command`",
            ),
            (
                "[[hooks.PostToolUse]]\ncommand = \" \"",
                "hooks.PostToolUse[0].command: is empty",
            ),
            (
                "[[hooks.PostToolUse]]\ncommand = 3",
                "hooks.PostToolUse[0].command: expected a string",
            ),
            (
                "[[hooks.PreToolUse]]\ncommand = \"x\"\ntimeout_ms = 0",
                "hooks.PreToolUse[0].timeout_ms: must be greater than 0",
            ),
            (
                "[[hooks.PreToolUse]]\ncommand = \"x\"\ntimeout_ms = \"5s\"",
                "hooks.PreToolUse[0].timeout_ms: expected a number",
            ),
            (
                "[[hooks.PreToolUse]]\ncommand = \"x\"\ntimeout = 5",
                "hooks.PreToolUse[0].timeout: write timeout_ms",
            ),
            (
                "[[hooks.PreToolUse]]\ncommand = \"x\"\non_failure = \"deny\"",
                "hooks.PreToolUse[0].on_failure: `deny` is not",
            ),
            (
                "[[hooks.PreToolUse]]\ncommand = \"x\"\nretries = 2",
                "hooks.PreToolUse[0].retries: unknown field; expected one of matcher, command",
            ),
            (
                "[[hooks.PreToolUse]]\nmatcher = \"Bash\"\nhooks = [{ type = \"command\", command = \"x\" }]",
                "hooks.PreToolUse[0].hooks: cogni's hooks are flat",
            ),
            (
                "[hooks.PreToolUse]\ncommand = \"x\"",
                "hooks.PreToolUse: expected an array of tables: write each hook as [[hooks.PreToolUse]]",
            ),
            ("hooks = 3", "hooks: expected a table of events"),
            ("[hooks]\nPreToolUse = [3]", "hooks.PreToolUse[0]: expected a table"),
        ];
        for (text, needle) in cases {
            let err = parse_text(text).unwrap_err();
            assert!(err.starts_with(needle), "{text}\n{err}");
        }
    }
}
