//! Tools offered on demand (MCP tools beyond `[mcp] max_eager_tools`):
//! the model sees one `search_tools` tool whose description names the
//! groups (servers) they come from; a tool it finds is offered from the
//! next request on, for the rest of the session, appended after the
//! others so the start of the tool list never changes.

use super::{parse_args, Tool, ToolInput, ToolResult};
use cogni_protocol::{ToolFormat, ToolSpec};
use serde::Deserialize;
use std::sync::{Arc, Mutex};

/// The name of the search tool.
pub const SEARCH_TOOLS: &str = "search_tools";
/// Tools one search returns when the model asks for no number.
const DEFAULT_LIMIT: usize = 5;
/// The most one search returns.
const MAX_LIMIT: usize = 20;

struct Entry {
    group: String,
    spec: ToolSpec,
    tool: Arc<dyn Tool>,
}

/// The tools held back, and which of them were found (in the order they
/// were found).
#[derive(Default)]
pub(super) struct Deferred {
    entries: Vec<Entry>,
    found: Mutex<Vec<usize>>,
    /// The spec of `search_tools` for these entries.
    spec: Option<ToolSpec>,
}

impl Clone for Deferred {
    /// A copy with its own record of what was found (as found so far).
    fn clone(&self) -> Self {
        Deferred {
            entries: self
                .entries
                .iter()
                .map(|e| Entry {
                    group: e.group.clone(),
                    spec: e.spec.clone(),
                    tool: e.tool.clone(),
                })
                .collect(),
            found: Mutex::new(self.found_indexes()),
            spec: self.spec.clone(),
        }
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct SearchArgs {
    query: String,
    limit: Option<usize>,
}

impl Deferred {
    /// Hold `tool` back, as one of `group`'s; one of the same name is
    /// replaced where it stands.
    pub(super) fn add(&mut self, group: &str, tool: Arc<dyn Tool>) {
        let entry = Entry {
            group: group.to_string(),
            spec: tool.spec(),
            tool,
        };
        match self
            .entries
            .iter_mut()
            .find(|e| e.spec.name == entry.spec.name)
        {
            Some(existing) => *existing = entry,
            None => self.entries.push(entry),
        }
        self.spec = Some(self.search_spec());
    }

    /// Keep only the tools whose name `keep` accepts.
    pub(super) fn retain(&mut self, keep: impl Fn(&str) -> bool) {
        let found: Vec<String> = self.found_names();
        self.entries.retain(|e| keep(&e.spec.name));
        self.spec = (!self.entries.is_empty()).then(|| self.search_spec());
        self.set_found(&found);
    }

    /// The spec of `search_tools`, when anything is held back.
    pub(super) fn search_tool(&self) -> Option<&ToolSpec> {
        self.spec.as_ref()
    }

    pub(super) fn entries(&self) -> impl Iterator<Item = (&str, &Arc<dyn Tool>)> {
        self.entries.iter().map(|e| (e.group.as_str(), &e.tool))
    }

    fn found_indexes(&self) -> Vec<usize> {
        self.found.lock().map(|f| f.clone()).unwrap_or_default()
    }

    /// The found tools, in the order they were found.
    pub(super) fn found(&self) -> Vec<(&ToolSpec, &Arc<dyn Tool>)> {
        self.found_indexes()
            .into_iter()
            .map(|i| (&self.entries[i].spec, &self.entries[i].tool))
            .collect()
    }

    pub(super) fn found_names(&self) -> Vec<String> {
        self.found()
            .into_iter()
            .map(|(spec, _)| spec.name.clone())
            .collect()
    }

    /// Mark these as found (those held back here), in this order.
    pub(super) fn set_found(&self, names: &[String]) {
        let indexes = names
            .iter()
            .filter_map(|n| self.entries.iter().position(|e| &e.spec.name == n))
            .collect();
        if let Ok(mut found) = self.found.lock() {
            *found = indexes;
        }
    }

    /// A found tool by name.
    pub(super) fn get(&self, name: &str) -> Option<(&ToolSpec, &Arc<dyn Tool>)> {
        self.found().into_iter().find(|(spec, _)| spec.name == name)
    }

    fn groups(&self) -> Vec<(&str, usize)> {
        let mut groups: Vec<(&str, usize)> = Vec::new();
        for e in &self.entries {
            match groups.iter_mut().find(|(g, _)| *g == e.group) {
                Some((_, n)) => *n += 1,
                None => groups.push((&e.group, 1)),
            }
        }
        groups
    }

    fn search_spec(&self) -> ToolSpec {
        let groups = self
            .groups()
            .iter()
            .map(|(g, n)| format!("{g} ({n} tool{})", if *n == 1 { "" } else { "s" }))
            .collect::<Vec<_>>()
            .join(", ");
        ToolSpec {
            name: SEARCH_TOOLS.into(),
            description: format!(
                "Find tools of these MCP servers by keywords and add them to your tools: {groups}. \
                 Search before you say a server cannot do something. A found tool is yours from \
                 your next step on, for the rest of the session; call it by the name given."
            ),
            format: ToolFormat::Function {
                parameters: serde_json::json!({
                    "type": "object",
                    "properties": {
                        "query": {"type": "string", "description": "Words of the tool's name or purpose, a server's name (all its tools), or exact tool names."},
                        "limit": {"type": "integer", "description": "Most tools to add (default 5, at most 20)."}
                    },
                    "required": ["query"],
                    "additionalProperties": false
                }),
            },
            // It changes what is offered, never the workspace.
            read_only: true,
        }
    }

    /// Run `search_tools`: the best matches are found (offered from the
    /// next request on) and described.
    pub(super) fn search(&self, input: ToolInput) -> ToolResult {
        let args: SearchArgs = match parse_args(SEARCH_TOOLS, input) {
            Ok(args) => args,
            Err(e) => return e,
        };
        let limit = args.limit.unwrap_or(DEFAULT_LIMIT).clamp(1, MAX_LIMIT);
        let words: Vec<String> = args
            .query
            .split(|c: char| c.is_whitespace() || c == ',')
            .filter(|w| !w.is_empty())
            .map(str::to_lowercase)
            .collect();
        let mut scored: Vec<(usize, usize)> = self
            .entries
            .iter()
            .enumerate()
            .map(|(i, e)| (score(e, &words), i))
            .filter(|(s, _)| *s > 0)
            .collect();
        // Best first; equal scores in the order the tools were added.
        scored.sort_by_key(|&(s, i)| (std::cmp::Reverse(s), i));
        scored.truncate(limit);
        if scored.is_empty() {
            return ToolResult::error(format!(
                "no tool matches `{}`. The servers and their tools: {}",
                args.query,
                self.catalog()
            ));
        }
        let mut found = self.found_indexes();
        let mut text = String::from(
            "These tools are yours from your next step on (call them by these names):\n",
        );
        for (_, i) in scored {
            let e = &self.entries[i];
            let first_line = e.spec.description.lines().next().unwrap_or_default();
            let already = if found.contains(&i) {
                " (already yours)"
            } else {
                found.push(i);
                ""
            };
            text.push_str(&format!(
                "- {} [{}]{already}: {first_line}\n",
                e.spec.name, e.group
            ));
        }
        if let Ok(mut f) = self.found.lock() {
            *f = found;
        }
        ToolResult::ok(text)
    }

    /// Every group with its tools' names.
    fn catalog(&self) -> String {
        self.groups()
            .iter()
            .map(|(g, _)| {
                let names: Vec<&str> = self
                    .entries
                    .iter()
                    .filter(|e| e.group == *g)
                    .map(|e| e.spec.name.as_str())
                    .collect();
                format!("{g}: {}", names.join(", "))
            })
            .collect::<Vec<_>>()
            .join("; ")
    }
}

/// How well `entry` matches the query's words: an exact name wins; then
/// words in the name count three, the server's name two, words in the
/// description one.
fn score(entry: &Entry, words: &[String]) -> usize {
    let name = entry.spec.name.to_lowercase();
    let description = entry.spec.description.to_lowercase();
    let group = entry.group.to_lowercase();
    words
        .iter()
        .map(|w| {
            if name == *w || name.ends_with(&format!("__{w}")) {
                100
            } else {
                3 * usize::from(name.contains(w.as_str()))
                    + 2 * usize::from(group == *w)
                    + usize::from(description.contains(w.as_str()))
            }
        })
        .sum()
}

#[cfg(test)]
mod tests {
    use super::super::{ToolConfig, ToolContext, ToolRegistry};
    use super::*;
    use cogni_protocol::{EditTool, SandboxMode, ToolCall};
    use futures::future::BoxFuture;

    struct Named(&'static str, &'static str);

    impl Tool for Named {
        fn spec(&self) -> ToolSpec {
            ToolSpec {
                name: self.0.into(),
                description: self.1.into(),
                format: ToolFormat::Function {
                    parameters: serde_json::json!({"type": "object", "properties": {}}),
                },
                read_only: false,
            }
        }

        fn run<'a>(&'a self, _: ToolInput, _: &'a ToolContext) -> BoxFuture<'a, ToolResult> {
            Box::pin(async move { ToolResult::ok(format!("ran {}", self.0)) })
        }
    }

    fn registry() -> ToolRegistry {
        let mut registry =
            ToolRegistry::from_config(&ToolConfig::default(), EditTool::None).unwrap();
        for (group, name, description) in [
            (
                "fs",
                "mcp__fs__read_file",
                "Read the complete contents of a file.",
            ),
            ("fs", "mcp__fs__write_file", "Create or overwrite a file."),
            (
                "fs",
                "mcp__fs__list_directory",
                "List the entries of a directory.",
            ),
            (
                "web",
                "mcp__web__fetch",
                "Fetch a URL and read it as markdown.",
            ),
        ] {
            registry.register_deferred(group, Arc::new(Named(name, description)));
        }
        registry
    }

    fn call(name: &str, arguments: serde_json::Value) -> ToolCall {
        ToolCall {
            id: "c".into(),
            name: name.into(),
            arguments: arguments.to_string(),
            kind: Default::default(),
        }
    }

    fn names(specs: Vec<ToolSpec>) -> Vec<String> {
        specs.into_iter().map(|s| s.name).collect()
    }

    #[tokio::test]
    async fn held_back_tools_are_offered_once_found_in_the_order_found() {
        let tmp = tempfile::tempdir().unwrap();
        let ctx = crate::paths::tests::ctx(tmp.path(), SandboxMode::WorkspaceWrite);
        let registry = registry();
        let offered = names(registry.specs());
        assert_eq!(offered.last().map(String::as_str), Some(SEARCH_TOOLS));
        assert!(!offered.iter().any(|n| n.starts_with("mcp__")));
        let search = registry.spec(SEARCH_TOOLS).unwrap();
        assert!(search.read_only);
        assert!(
            search.description.contains("fs (3 tools), web (1 tool)"),
            "{}",
            search.description
        );
        // Not found yet: unknown, and nothing runs.
        let early = registry
            .dispatch(&call("mcp__web__fetch", serde_json::json!({})), &ctx)
            .await;
        assert!(early.is_error && early.content.contains("unknown tool"));

        let found = registry
            .dispatch(
                &call(SEARCH_TOOLS, serde_json::json!({"query": "fetch url"})),
                &ctx,
            )
            .await;
        assert!(!found.is_error, "{}", found.content);
        assert!(
            found
                .content
                .contains("- mcp__web__fetch [web]: Fetch a URL"),
            "{}",
            found.content
        );
        let found = registry
            .dispatch(
                &call(SEARCH_TOOLS, serde_json::json!({"query": "fs", "limit": 2})),
                &ctx,
            )
            .await;
        assert!(
            found.content.contains("mcp__fs__read_file"),
            "{}",
            found.content
        );
        assert!(
            found.content.contains("mcp__fs__write_file"),
            "{}",
            found.content
        );
        assert!(
            !found.content.contains("list_directory"),
            "{}",
            found.content
        );
        assert_eq!(
            names(registry.found_specs()),
            [
                "mcp__web__fetch",
                "mcp__fs__read_file",
                "mcp__fs__write_file"
            ]
        );
        // An exact name wins over everything else; found again, it says so.
        let exact = registry
            .dispatch(
                &call(
                    SEARCH_TOOLS,
                    serde_json::json!({"query": "read_file", "limit": 1}),
                ),
                &ctx,
            )
            .await;
        assert!(
            exact
                .content
                .contains("mcp__fs__read_file [fs] (already yours)"),
            "{}",
            exact.content
        );
        let ran = registry
            .dispatch(&call("mcp__web__fetch", serde_json::json!({})), &ctx)
            .await;
        assert_eq!(ran.content, "ran mcp__web__fetch");

        let none = registry
            .dispatch(
                &call(SEARCH_TOOLS, serde_json::json!({"query": "quantum"})),
                &ctx,
            )
            .await;
        assert!(none.is_error);
        assert!(
            none.content.contains("fs: mcp__fs__read_file, mcp__fs__write_file, mcp__fs__list_directory; web: mcp__web__fetch"),
            "{}",
            none.content
        );
        let bad = registry
            .dispatch(&call(SEARCH_TOOLS, serde_json::json!({"q": "x"})), &ctx)
            .await;
        assert!(bad.is_error, "{}", bad.content);
    }

    #[test]
    fn a_copy_finds_on_its_own_and_a_replacement_keeps_what_was_found() {
        let mut registry = registry();
        registry.set_found(&["mcp__fs__write_file".into(), "mcp__web__fetch".into()]);
        let copy = registry.clone();
        copy.set_found(&[]);
        assert_eq!(
            registry.found_names(),
            ["mcp__fs__write_file", "mcp__web__fetch"]
        );
        assert!(copy.found_names().is_empty());
        // Leaving a tool out keeps the others found.
        registry.retain(|n| n != "mcp__fs__write_file");
        assert_eq!(registry.found_names(), ["mcp__web__fetch"]);
        assert_eq!(registry.deferred_entries().count(), 3);
        registry.retain(|n| !n.starts_with("mcp__"));
        assert!(registry.spec(SEARCH_TOOLS).is_none());
        assert!(!names(registry.specs()).contains(&SEARCH_TOOLS.to_string()));
    }
}
