//! What an untrusted project's `cogni.toml` may set: an allowlist, each
//! entry with its reason. Everything else in the file is ignored, with one
//! warning naming each key, so a key nobody thought about is refused, not
//! let through.
//!
//! The rules compare the project's value with the layers below it (the
//! user's `$COGNI_HOME/config.toml`) and the built-in defaults: limits may
//! only tighten, the approval policy only ask more, the sandbox only
//! reach less, paths must stay inside the repository, the provider must be
//! one the user configured. Commands, servers, providers' addresses and
//! keys, and agents never come from an untrusted project.

use super::ConfigFile;
use cogni_core::delegate::DelegationLimits;
use cogni_protocol::{ApprovalPolicy, ResourceLimits, SandboxMode};
use cogni_tools::env::{EnvInherit, ShellEnvPolicy};
use cogni_tools::web_fetch::WebFetchConfig;
use cogni_tools::ToolConfig;
use std::path::{Component, Path};
use toml::{Table, Value};

/// The limit below a project's value: `None` when there is none.
type Below = fn(&ConfigFile) -> Option<f64>;

/// On what condition a key is accepted.
#[derive(Clone, Copy)]
enum Rule {
    /// Any value.
    Any,
    /// A number no greater than the one below.
    AtMost(Below),
    /// An approval policy that asks at least as much as the one below.
    AsksMore,
    /// A sandbox mode that reaches no further than the one below.
    ReachesLess,
    /// `false`, or `true` where the layer below has it on.
    OffUnlessBelow(fn(&ConfigFile) -> bool),
    /// A path inside the repository (each one, for a list).
    InsideRepo,
    /// A provider the user's own config names.
    UsersProvider,
    /// A name the layers below do not define (it adds, never overrides).
    NewName,
    /// Tools that the layers below enable too.
    FewerTools,
    /// An environment policy that passes no more to commands.
    EnvNoLooser,
    /// Effects that run no command (they add to the user's).
    EffectsWithoutCommand,
}

struct Entry {
    /// The key path; `*` stands for one name.
    key: &'static str,
    rule: Rule,
    /// Why an untrusted project may set it.
    why: &'static str,
}

const fn entry(key: &'static str, rule: Rule, why: &'static str) -> Entry {
    Entry { key, rule, why }
}

const CAP: &str = "a cap on what the model is shown or sent: lower only costs the model context";
const LIMIT: &str = "a limit: lower only stops work sooner";
const ADDS: &str = "a check of the answer, added after your own";

/// `[tools]` below, and the defaults.
fn tools(b: &ConfigFile) -> (super::ToolsFile, ToolConfig) {
    (b.tools.clone().unwrap_or_default(), ToolConfig::default())
}

/// `[tools.web_fetch]` below (its hosts are never a project's to add).
fn web_fetch(b: &ConfigFile) -> super::WebFetchFile {
    tools(b).0.web_fetch.unwrap_or_default()
}

/// The allowlist.
#[rustfmt::skip]
const ALLOWED: &[Entry] = &[
    entry("model", Rule::Any, "which model answers, through your own provider and key"),
    entry("provider", Rule::UsersProvider, "only a provider your own config sets up, so prompts go nowhere you did not choose"),
    entry("reasoning_effort", Rule::Any, "how hard the model thinks; budgets bound the spend"),
    entry("temperature", Rule::Any, "sampling only"),
    entry("max_tokens", Rule::Any, "the length of one answer; budgets bound the spend"),
    entry("developer_instructions", Rule::Any, "instructions, as the repository's AGENTS.md gives them"),
    entry("base_instructions", Rule::Any, "instructions, as the repository's AGENTS.md gives them"),
    entry("base_instructions_file", Rule::InsideRepo, "instructions from a file of the repository"),
    entry("project_doc_max_bytes", Rule::AtMost(|b| Some(b.project_doc_max_bytes.unwrap_or(super::agents_md::DEFAULT_MAX_BYTES) as f64)), CAP),
    entry("verbose_max_bytes", Rule::AtMost(|b| Some(b.verbose_max_bytes.unwrap_or(super::DEFAULT_VERBOSE_MAX_BYTES) as f64)), "how much of each payload verbose logs keep; lower only"),
    entry("max_context_bytes", Rule::AtMost(max_context_bytes), CAP),
    entry("max_iterations", Rule::AtMost(max_steps), LIMIT),
    entry("approval_policy", Rule::AsksMore, "a policy that asks you at least as often"),
    entry("sandbox_mode", Rule::ReachesLess, "a sandbox at least as tight"),
    entry("sandbox_workspace_write.network_access", Rule::OffUnlessBelow(|b| b.sandbox_workspace_write.as_ref().and_then(|s| s.network_access).unwrap_or(false)), "the network off, or on where you allow it"),
    entry("sandbox_workspace_write.writable_roots", Rule::InsideRepo, "more writable directories, inside the repository"),
    entry("sandbox.max_processes", Rule::AtMost(|b| limit(b, |l| l.max_processes)), LIMIT),
    entry("sandbox.max_file_size_bytes", Rule::AtMost(|b| limit(b, |l| l.max_file_size_bytes)), LIMIT),
    entry("sandbox.cpu_time_secs", Rule::AtMost(|b| limit(b, |l| l.cpu_time_secs)), LIMIT),
    entry("features.parallel_tools", Rule::Any, "how calls are scheduled"),
    entry("features.skills_enabled", Rule::Any, "your skills; a project's own still wait for trust"),
    entry("skills.max_listing_bytes", Rule::AtMost(|b| Some(b.skills.as_ref().and_then(|s| s.max_listing_bytes).unwrap_or(cogni_tools::skills::DEFAULT_MAX_LISTING_BYTES) as f64)), CAP),
    entry("tools.enabled", Rule::FewerTools, "fewer tools"),
    entry("tools.edit_tool", Rule::Any, "which file-editing tool the model gets"),
    entry("tools.shell_env", Rule::EnvNoLooser, "an environment that passes no more to commands"),
    entry("tools.shell_timeout_ms", Rule::AtMost(|b| { let (t, d) = tools(b); Some(t.shell_timeout_ms.unwrap_or(d.shell_timeout.as_millis() as u64) as f64) }), LIMIT),
    entry("tools.max_shell_timeout_ms", Rule::AtMost(|b| { let (t, d) = tools(b); Some(t.max_shell_timeout_ms.unwrap_or(d.max_shell_timeout.as_millis() as u64) as f64) }), LIMIT),
    entry("tools.capture_limit_bytes", Rule::AtMost(|b| { let (t, d) = tools(b); Some(t.capture_limit_bytes.unwrap_or(d.capture_limit_bytes) as f64) }), CAP),
    entry("tools.max_output_bytes", Rule::AtMost(|b| { let (t, d) = tools(b); Some(t.max_output_bytes.unwrap_or(d.max_output_bytes) as f64) }), CAP),
    entry("tools.max_output_lines", Rule::AtMost(|b| { let (t, d) = tools(b); Some(t.max_output_lines.unwrap_or(d.max_output_lines) as f64) }), CAP),
    entry("tools.read_max_bytes", Rule::AtMost(|b| { let (t, d) = tools(b); Some(t.read_max_bytes.unwrap_or(d.read_max_bytes) as f64) }), CAP),
    entry("tools.list_max_entries", Rule::AtMost(|b| { let (t, d) = tools(b); Some(t.list_max_entries.unwrap_or(d.list_max_entries) as f64) }), CAP),
    entry("tools.grep_max_results", Rule::AtMost(|b| { let (t, d) = tools(b); Some(t.grep_max_results.unwrap_or(d.grep_max_results) as f64) }), CAP),
    entry("tools.max_background_jobs", Rule::AtMost(|b| { let (t, d) = tools(b); Some(t.max_background_jobs.unwrap_or(d.max_background_jobs) as f64) }), LIMIT),
    entry("tools.web_search", Rule::OffUnlessBelow(|b| tools(b).0.web_search.unwrap_or(false)), "the provider's web search off, or on where you have it on (it costs, and what it finds is the web's to write)"),
    entry("tools.web_fetch.enabled", Rule::OffUnlessBelow(|b| web_fetch(b).enabled.unwrap_or(WebFetchConfig::default().enabled)), "web_fetch off, or on where you have it on"),
    entry("tools.web_fetch.max_bytes", Rule::AtMost(|b| Some(web_fetch(b).max_bytes.unwrap_or(WebFetchConfig::default().max_bytes) as f64)), CAP),
    entry("tools.web_fetch.timeout_secs", Rule::AtMost(|b| Some(web_fetch(b).timeout_secs.unwrap_or(WebFetchConfig::default().timeout.as_secs()) as f64)), LIMIT),
    entry("tools.web_fetch.max_redirects", Rule::AtMost(|b| Some(web_fetch(b).max_redirects.unwrap_or(WebFetchConfig::default().max_redirects) as f64)), LIMIT),
    entry("tools.background_timeout_secs", Rule::AtMost(|b| { let (t, d) = tools(b); Some(t.background_timeout_secs.unwrap_or(d.background_timeout.as_secs()) as f64) }), LIMIT),
    entry("context_strategy", Rule::Any, "how history is fitted into the context window"),
    entry("repl.status_line", Rule::Any, "how the REPL looks"),
    entry("repl.notify", Rule::Any, "how the REPL tells you a turn ended"),
    entry("repl.notify_min_secs", Rule::Any, "how the REPL tells you a turn ended"),
    entry("memory.max_bytes", Rule::AtMost(|b| Some(b.memory.as_ref().and_then(|m| m.max_bytes).unwrap_or(cogni_tools::memory::DEFAULT_MAX_BYTES) as f64)), CAP),
    entry("compaction.token_limit", Rule::AtMost(|b| b.compaction.as_ref().and_then(|c| c.token_limit).map(|t| t as f64)), "compacting sooner"),
    entry("compaction.context_fraction", Rule::AtMost(|b| b.compaction.as_ref().and_then(|c| c.context_fraction).or(Some(cogni_core::CompactionConfig::default().context_fraction))), "compacting sooner"),
    entry("effects", Rule::EffectsWithoutCommand, "limits and pattern guardrails, added after your own"),
    entry("agent.auto_context", Rule::Any, "files of the workspace attached to a prompt"),
    entry("agent.max_context_bytes", Rule::AtMost(max_context_bytes), CAP),
    entry("agent.enable_plan", Rule::Any, "a plan tool"),
    entry("agent.enable_reflect", Rule::Any, "a critique after each step; budgets bound the spend"),
    entry("agent.enable_self_diff", Rule::Any, "a diff of two answers in the critique"),
    entry("agent.reflection_policy", Rule::Any, "what a critique may block"),
    entry("agent.reflection_placement", Rule::Any, "where the critique sits in a request"),
    entry("agent.done_token", Rule::Any, "a word that ends the turn"),
    entry("agent.max_steps", Rule::AtMost(max_steps), LIMIT),
    entry("agent.test_retries", Rule::AtMost(|b| Some(b.agent.as_ref().and_then(|a| a.test_retries).unwrap_or(0) as f64)), LIMIT),
    entry("agent.test_timeout_seconds", Rule::AtMost(|b| Some(b.agent.as_ref().and_then(|a| a.test_timeout_seconds).unwrap_or(cogni_core::effects::test_run::DEFAULT_TIMEOUT.as_secs()) as f64)), LIMIT),
    entry("run.timeout_secs", Rule::AtMost(|b| b.run.as_ref().and_then(|r| r.timeout_secs)), LIMIT),
    entry("run.output_guardrail.schema_file", Rule::InsideRepo, ADDS),
    entry("run.output_guardrail.regex", Rule::Any, ADDS),
    entry("delegation.max_delegation_depth", Rule::AtMost(|b| Some(b.delegation.and_then(|d| d.max_delegation_depth).unwrap_or(DelegationLimits::default().max_depth) as f64)), LIMIT),
    entry("delegation.max_concurrent_agents", Rule::AtMost(|b| Some(b.delegation.and_then(|d| d.max_concurrent_agents).unwrap_or(DelegationLimits::default().max_concurrent) as f64)), LIMIT),
    entry("delegation.max_agents_per_session", Rule::AtMost(|b| Some(b.delegation.and_then(|d| d.max_agents_per_session).unwrap_or(DelegationLimits::default().max_agents) as f64)), LIMIT),
    entry("mcp.max_eager_tools", Rule::Any, "how your MCP servers' tools are offered"),
    entry("model_aliases.*", Rule::NewName, "a new short name for a model; your own names stay yours"),
];

/// Each key an untrusted project may set, with the reason.
pub fn allowed() -> impl Iterator<Item = (&'static str, &'static str)> {
    ALLOWED.iter().map(|e| (e.key, e.why))
}

/// Tables whose keys are names: an ignored one is named whole
/// (`hooks.SessionStart`, `mcp_servers.x`), not key by key.
const NAMED: &[&str] = &["hooks", "mcp_servers", "agents", "model_families"];

fn max_steps(b: &ConfigFile) -> Option<f64> {
    let steps = b
        .agent
        .as_ref()
        .and_then(|a| a.max_steps)
        .or(b.max_iterations);
    Some(f64::from(
        steps.unwrap_or(cogni_core::session::DEFAULT_MAX_ITERATIONS),
    ))
}

fn max_context_bytes(b: &ConfigFile) -> Option<f64> {
    let below = b.agent.as_ref().and_then(|a| a.max_context_bytes);
    Some(below.unwrap_or(cogni_tools::attach::DEFAULT_MAX_BYTES) as f64)
}

fn limit(b: &ConfigFile, get: fn(&super::SandboxLimitsFile) -> Option<u64>) -> Option<f64> {
    let below = b.sandbox.as_ref().and_then(get);
    let default = ResourceLimits::default();
    let default = get(&super::SandboxLimitsFile {
        max_processes: default.max_processes,
        max_file_size_bytes: default.max_file_size_bytes,
        cpu_time_secs: default.cpu_time_secs,
    });
    below.or(default).map(|v| v as f64)
}

/// What is left of an untrusted project's file, and the keys it lost.
pub(super) struct Filtered {
    pub table: Table,
    pub ignored: Vec<String>,
}

/// Keep of `project` (the file as written) only what the allowlist
/// accepts over `base` (the layers below). `repo` is the project's
/// directory; relative paths in the file are relative to it.
pub(super) fn filter(project: Table, base: &ConfigFile, repo: &Path) -> Filtered {
    let repo = cogni_sandbox::sys::canonicalize(repo).unwrap_or_else(|_| repo.to_path_buf());
    let mut ignored = Vec::new();
    let table = walk(project, "", &Context { base, repo: &repo }, &mut ignored);
    Filtered { table, ignored }
}

struct Context<'a> {
    base: &'a ConfigFile,
    repo: &'a Path,
}

fn walk(table: Table, prefix: &str, cx: &Context, ignored: &mut Vec<String>) -> Table {
    let mut kept = Table::new();
    for (key, value) in table {
        let path = if prefix.is_empty() {
            key.clone()
        } else {
            format!("{prefix}.{key}")
        };
        if let Some(entry) = ALLOWED.iter().find(|e| matches(e.key, &path)) {
            if let Some(value) = apply(entry.rule, &path, value, cx, ignored) {
                kept.insert(key, value);
            }
            continue;
        }
        match value {
            Value::Table(inner) if has_entries_below(&path) => {
                let inner = walk(inner, &path, cx, ignored);
                if !inner.is_empty() {
                    kept.insert(key, Value::Table(inner));
                }
            }
            Value::Table(inner) if NAMED.contains(&path.as_str()) => {
                ignored.extend(inner.keys().map(|name| format!("{path}.{name}")));
            }
            value => report_all(&path, &value, ignored),
        }
    }
    kept
}

/// Every leaf of an ignored value, by path.
fn report_all(path: &str, value: &Value, ignored: &mut Vec<String>) {
    match value {
        Value::Table(inner) if !inner.is_empty() => {
            for (name, value) in inner {
                report_all(&format!("{path}.{name}"), value, ignored);
            }
        }
        _ => ignored.push(path.to_string()),
    }
}

/// `pattern` (with `*` for one name) names `path`.
fn matches(pattern: &str, path: &str) -> bool {
    let (mut p, mut k) = (pattern.split('.'), path.split('.'));
    loop {
        match (p.next(), k.next()) {
            (None, None) => return true,
            (Some(a), Some(b)) if a == "*" || a == b => {}
            _ => return false,
        }
    }
}

/// Some allowlisted key lies below `path`.
fn has_entries_below(path: &str) -> bool {
    let depth = path.split('.').count();
    ALLOWED.iter().any(|e| {
        e.key.split('.').count() > depth
            && e.key
                .split('.')
                .zip(path.split('.'))
                .all(|(a, b)| a == "*" || a == b)
    })
}

/// The value if `rule` accepts it (parts of a list may be dropped, each
/// reported).
fn apply(
    rule: Rule,
    path: &str,
    value: Value,
    cx: &Context,
    ignored: &mut Vec<String>,
) -> Option<Value> {
    let refuse = |ignored: &mut Vec<String>, why: String| {
        ignored.push(if why.is_empty() {
            path.to_string()
        } else {
            format!("{path} ({why})")
        });
        None
    };
    match rule {
        Rule::Any => Some(value),
        Rule::AtMost(below) => {
            let Some(v) = value.as_integer().map(|i| i as f64).or(value.as_float()) else {
                return Some(value); // the type error is reported when the file is read
            };
            match below(cx.base) {
                Some(max) if v > max => refuse(
                    ignored,
                    format!("{v} is over {max}, the limit you set or the default"),
                ),
                _ => Some(value),
            }
        }
        Rule::AsksMore => {
            let Some(mine) = value.as_str().and_then(ApprovalPolicy::parse) else {
                return Some(value);
            };
            let below = cx.base.approval_policy.unwrap_or_default();
            if mine.strictness() < below.strictness() {
                return refuse(
                    ignored,
                    format!(
                        "\"{}\" asks less than \"{}\"",
                        mine.as_str(),
                        below.as_str()
                    ),
                );
            }
            Some(value)
        }
        Rule::ReachesLess => {
            let Some(mine) = value.as_str().and_then(SandboxMode::parse) else {
                return Some(value);
            };
            let below = cx.base.sandbox_mode.unwrap_or_default();
            if mine.reach() > below.reach() {
                return refuse(
                    ignored,
                    format!(
                        "\"{}\" reaches further than \"{}\"",
                        mine.as_str(),
                        below.as_str()
                    ),
                );
            }
            Some(value)
        }
        Rule::OffUnlessBelow(below) => {
            if value.as_bool() == Some(true) && !below(cx.base) {
                return refuse(ignored, String::new());
            }
            Some(value)
        }
        Rule::InsideRepo => match value {
            Value::Array(items) => {
                let mut kept = Vec::new();
                for item in items {
                    match item.as_str() {
                        Some(p) if !inside(p, cx.repo) => {
                            ignored.push(format!("{path} \"{p}\" (outside the repository)"));
                        }
                        _ => kept.push(item),
                    }
                }
                Some(Value::Array(kept))
            }
            Value::String(p) if !inside(&p, cx.repo) => {
                refuse(ignored, format!("\"{p}\" is outside the repository"))
            }
            other => Some(other),
        },
        Rule::UsersProvider => {
            let Some(id) = value.as_str() else {
                return Some(value);
            };
            let users = cx.base.provider.as_deref().unwrap_or("openai") == id
                || cx.base.model_providers.contains_key(id);
            if !users || id == "scripted" {
                return refuse(
                    ignored,
                    format!("\"{id}\" is not a provider your own config sets up"),
                );
            }
            Some(value)
        }
        Rule::NewName => {
            let name = path.rsplit('.').next().unwrap_or(path);
            if cx.base.model_aliases.contains_key(name) {
                return refuse(ignored, "your own alias of that name stays".into());
            }
            Some(value)
        }
        Rule::FewerTools => {
            let below = cx
                .base
                .tools
                .as_ref()
                .and_then(|t| t.enabled.clone())
                .unwrap_or_else(|| ToolConfig::default().enabled);
            let Some(items) = value.as_array() else {
                return Some(value);
            };
            let extra: Vec<&str> = items
                .iter()
                .filter_map(Value::as_str)
                .filter(|t| !below.iter().any(|b| b == t))
                .collect();
            if !extra.is_empty() {
                return refuse(ignored, format!("it enables {}", extra.join(", ")));
            }
            Some(value)
        }
        Rule::EnvNoLooser => {
            let Ok(mine) = value.clone().try_into::<ShellEnvPolicy>() else {
                return Some(value);
            };
            let below = cx
                .base
                .tools
                .as_ref()
                .and_then(|t| t.shell_env.clone())
                .unwrap_or_default();
            if env_loosens(&mine, &below) {
                return refuse(
                    ignored,
                    "it passes more of the environment to commands".into(),
                );
            }
            Some(value)
        }
        Rule::EffectsWithoutCommand => {
            let Value::Array(items) = value else {
                return Some(value);
            };
            let mut kept = Vec::new();
            for (i, item) in items.into_iter().enumerate() {
                if item.get("command").is_some() {
                    ignored.push(format!(
                        "{path}[{i}] (it runs a command outside the sandbox)"
                    ));
                } else {
                    kept.push(item);
                }
            }
            Some(Value::Array(kept))
        }
    }
}

/// `path` (relative to `repo`, or absolute) inside `repo`: canonical when
/// it exists; otherwise it may not contain `..`.
pub fn inside(path: &str, repo: &Path) -> bool {
    let path = repo.join(path);
    match cogni_sandbox::sys::canonicalize(&path) {
        Ok(real) => real.starts_with(repo),
        Err(_) => path.starts_with(repo) && !path.components().any(|c| c == Component::ParentDir),
    }
}

fn inherit_rank(inherit: EnvInherit) -> u8 {
    match inherit {
        EnvInherit::None => 0,
        EnvInherit::Core => 1,
        EnvInherit::All => 2,
    }
}

/// `project` passes more of the environment to commands than `base`.
fn env_loosens(project: &ShellEnvPolicy, base: &ShellEnvPolicy) -> bool {
    (project.ignore_default_excludes && !base.ignore_default_excludes)
        || inherit_rank(project.inherit) > inherit_rank(base.inherit)
        || base.exclude.iter().any(|e| !project.exclude.contains(e))
        || (!base.include_only.is_empty()
            && (project.include_only.is_empty()
                || project
                    .include_only
                    .iter()
                    .any(|p| !base.include_only.contains(p))))
        || !project.set.is_empty() && project.set != base.set
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What the allowlist keeps of `project` over the user's `user`, and
    /// what it reports.
    fn run(user: &str, project: &str) -> (Table, Vec<String>) {
        let repo = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(repo.path().join("sub")).unwrap();
        let base = ConfigFile::parse(Path::new("user.toml"), user).unwrap();
        let filtered = filter(toml::from_str(project).unwrap(), &base, repo.path());
        (filtered.table, filtered.ignored)
    }

    #[test]
    fn each_rule_keeps_what_tightens_and_names_what_it_ignores() {
        // (the user's config, the project's, kept (as TOML), ignored)
        let cases: &[(&str, &str, &str, &[&str])] = &[
            ("", "model = \"m\"\ntemperature = 0.1", "model = \"m\"\ntemperature = 0.1\n", &[]),
            ("", "shell = \"/bin/evil\"", "", &["shell"]),
            ("", "[agent]\ntest_command = \"x\"\nenable_plan = true", "[agent]\nenable_plan = true\n", &["agent.test_command"]),
            ("max_iterations = 10", "max_iterations = 5", "max_iterations = 5\n", &[]),
            ("max_iterations = 10", "max_iterations = 11", "", &["max_iterations (11 is over 10"]),
            ("", "max_iterations = 26", "", &["max_iterations (26 is over 25"]),
            ("", "[agent]\nmax_steps = 1000", "", &["agent.max_steps"]),
            ("approval_policy = \"untrusted\"", "approval_policy = \"never\"", "", &["approval_policy (\"never\" asks less than \"untrusted\")"]),
            ("approval_policy = \"on-request\"", "approval_policy = \"untrusted\"", "approval_policy = \"untrusted\"\n", &[]),
            ("", "sandbox_mode = \"read-only\"", "sandbox_mode = \"read-only\"\n", &[]),
            ("", "sandbox_mode = \"danger-full-access\"", "", &["sandbox_mode"]),
            ("", "[sandbox_workspace_write]\nnetwork_access = true", "", &["sandbox_workspace_write.network_access"]),
            ("[sandbox_workspace_write]\nnetwork_access = true", "[sandbox_workspace_write]\nnetwork_access = true", "[sandbox_workspace_write]\nnetwork_access = true\n", &[]),
            ("", "[sandbox_workspace_write]\nwritable_roots = [\"sub\", \"/\", \"../x\"]", "[sandbox_workspace_write]\nwritable_roots = [\"sub\"]\n", &["writable_roots \"/\"", "writable_roots \"../x\""]),
            ("", "[sandbox]\nmax_processes = 10\ncpu_time_secs = 5", "[sandbox]\ncpu_time_secs = 5\nmax_processes = 10\n", &[]),
            ("", "[sandbox]\nmax_processes = 100000", "", &["sandbox.max_processes"]),
            ("", "[tools]\nmax_background_jobs = 1000\nmax_output_bytes = 100", "[tools]\nmax_output_bytes = 100\n", &["tools.max_background_jobs"]),
            ("", "[tools]\nenabled = [\"read_file\", \"evil\"]", "", &["tools.enabled (it enables evil)"]),
            ("", "[tools]\nenabled = [\"read_file\"]", "[tools]\nenabled = [\"read_file\"]\n", &[]),
            ("", "[tools.shell_env]\nset = { LD_PRELOAD = \"x.so\" }", "", &["tools.shell_env"]),
            ("", "[tools.shell_env]\ninherit = \"core\"", "[tools.shell_env]\ninherit = \"core\"\n", &[]),
            ("", "[tools.web_fetch]\nallowed_domains = [\"127.0.0.1\"]\nenabled = true\nmax_bytes = 1000\ntimeout_secs = 60", "[tools.web_fetch]\nenabled = true\nmax_bytes = 1000\n", &["tools.web_fetch.allowed_domains", "tools.web_fetch.timeout_secs (60 is over 30"]),
            ("[tools.web_fetch]\nenabled = false", "[tools.web_fetch]\nenabled = true\nmax_redirects = 0", "[tools.web_fetch]\nmax_redirects = 0\n", &["tools.web_fetch.enabled"]),
            ("", "[tools]\nweb_search = true", "", &["tools.web_search"]),
            ("[tools]\nweb_search = true", "[tools]\nweb_search = false", "[tools]\nweb_search = false\n", &[]),
            ("", "provider = \"ollama\"", "", &["provider (\"ollama\" is not a provider your own config sets up)"]),
            ("", "provider = \"openai\"", "provider = \"openai\"\n", &[]),
            ("[model_providers.local]\nbase_url = \"http://127.0.0.1:1\"", "provider = \"local\"", "provider = \"local\"\n", &[]),
            ("provider = \"scripted\"", "provider = \"scripted\"", "", &["provider"]),
            ("", "[model_providers.openai]\nwire_api = \"scripted\"\nscript = \"s.toml\"", "", &["model_providers.openai.wire_api", "model_providers.openai.script"]),
            ("", "[[hooks.SessionStart]]\ncommand = \"x\"", "", &["hooks.SessionStart"]),
            ("", "[mcp_servers.x]\ncommand = \"x\"", "", &["mcp_servers.x"]),
            ("", "[agents.x]\ndescription = \"d\"", "", &["agents.x"]),
            ("", "[memory]\nenabled = true\nmax_bytes = 10", "[memory]\nmax_bytes = 10\n", &["memory.enabled"]),
            ("", "effects = [{ kind = \"step_limit\", steps = 3 }, { kind = \"guardrail\", on = \"reply\", command = \"x\" }]", "effects = [{ kind = \"step_limit\", steps = 3 }]\n", &["effects[1]"]),
            ("", "[run.output_guardrail]\nregex = \"^A\"\ncommand = \"x\"", "[run.output_guardrail]\nregex = \"^A\"\n", &["run.output_guardrail.command"]),
            ("[model_aliases]\nfast = \"a\"", "[model_aliases]\nfast = \"b\"\nnew = \"c\"", "[model_aliases]\nnew = \"c\"\n", &["model_aliases.fast"]),
            ("", "base_instructions_file = \"/etc/passwd\"", "", &["base_instructions_file"]),
            ("", "trusted_projects = [\"/\"]", "", &["trusted_projects"]),
        ];
        for (user, project, kept, ignored) in cases {
            let (table, reported) = run(user, project);
            let want: Table = toml::from_str(kept).unwrap();
            assert_eq!(table, want, "kept of {project:?} over {user:?}");
            assert_eq!(reported.len(), ignored.len(), "{project:?}: {reported:?}");
            for want in *ignored {
                assert!(
                    reported.iter().any(|r| r.contains(want)),
                    "{project:?}: {want:?} not in {reported:?}"
                );
            }
        }
    }

    #[test]
    fn every_entry_names_a_key_of_the_config_file() {
        // A typo in the list would allow nothing and hide it.
        for (key, why) in allowed() {
            assert!(!why.is_empty(), "{key} has no reason");
            let mut table = Table::new();
            let mut at = &mut table;
            let parts: Vec<&str> = key.split('.').collect();
            for part in &parts[..parts.len() - 1] {
                let name = if *part == "*" { "x" } else { part };
                at = at
                    .entry(name.to_string())
                    .or_insert(Value::Table(Table::new()))
                    .as_table_mut()
                    .unwrap();
            }
            let last = parts[parts.len() - 1];
            let name = if last == "*" { "x" } else { last };
            at.insert(name.to_string(), Value::Boolean(true));
            let mut unknown = Vec::new();
            let _: Result<ConfigFile, _> =
                serde_ignored::deserialize(Value::Table(table), |p| unknown.push(p.to_string()));
            assert!(unknown.is_empty(), "{key} is not a key: {unknown:?}");
        }
    }
}
