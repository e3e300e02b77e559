//! Claude Code's tool names as cogni's: for hook matchers (`Bash`,
//! `Edit|Write`) and for `permissions.deny` rules (`Bash(rm -rf:*)`,
//! `Read(./secrets/**)`), which become guardrails over a call's
//! arguments (docs/import.md#permissions).

/// Claude Code's tools and cogni's for each (none: cogni has no such tool).
const TOOLS: &[(&str, &[&str])] = &[
    ("Bash", &["shell"]),
    ("BashOutput", &["shell_output"]),
    ("KillShell", &["shell_kill"]),
    ("KillBash", &["shell_kill"]),
    ("Read", &["read_file"]),
    ("Edit", &["apply_patch", "edit_file"]),
    ("MultiEdit", &["apply_patch", "edit_file"]),
    ("Write", &["write_file"]),
    ("Grep", &["grep"]),
    ("Glob", &["glob"]),
    ("LS", &["list_dir"]),
    ("TodoWrite", &["update_plan"]),
    ("Task", &["delegate_to_agent", "spawn_agents"]),
    ("Skill", &["skill"]),
    ("NotebookEdit", &[]),
    ("NotebookRead", &[]),
    ("WebFetch", &["web_fetch"]),
    ("WebSearch", &[]),
    ("SlashCommand", &[]),
    ("ExitPlanMode", &[]),
];

/// The tools a `Read(PATH)` rule covers (Claude Code: every tool that
/// reads files), and an `Edit(PATH)` rule (every tool that edits).
const READ_TOOLS: &[&str] = &["read_file", "grep", "glob", "list_dir"];
const EDIT_TOOLS: &[&str] = &["apply_patch", "edit_file", "write_file"];

/// Claude Code's tool names `names` as cogni's, in order, once each.
fn cogni_tools<'a>(names: impl IntoIterator<Item = &'a str>) -> Vec<&'static str> {
    let mut tools: Vec<&'static str> = Vec::new();
    for name in names {
        for (claude, cogni) in TOOLS {
            if *claude == name {
                for tool in cogni.iter() {
                    if !tools.contains(tool) {
                        tools.push(tool);
                    }
                }
            }
        }
    }
    tools
}

/// A hook's tool matcher (`Bash`, `Edit|Write`, `Notebook.*`,
/// `mcp__github__.*`) over cogni's tool names: the cogni tools of the
/// Claude Code tools it matches, MCP alternatives as written. `None`:
/// every tool. An error when it matches no tool cogni has.
pub(super) fn tool_matcher(matcher: &str) -> Result<Option<String>, String> {
    let re = regex::Regex::new(&format!("^(?:{matcher})$"))
        .map_err(|_| "is not a valid regex".to_string())?;
    let claude: Vec<&str> = TOOLS
        .iter()
        .map(|(name, _)| *name)
        .filter(|n| re.is_match(n))
        .collect();
    if claude.len() == TOOLS.len() && re.is_match("mcp__server__tool") {
        return Ok(None);
    }
    let mut alternatives: Vec<String> = cogni_tools(claude).into_iter().map(String::from).collect();
    alternatives.extend(
        matcher
            .split('|')
            .map(str::trim)
            .filter(|alt| alt.starts_with("mcp__"))
            .map(String::from),
    );
    if alternatives.is_empty() {
        return Err("names no tool cogni has".into());
    }
    Ok(Some(alternatives.join("|")))
}

/// A `permissions.deny` rule as a guardrail's `tools` and `pattern`
/// (a regex over the call's arguments as JSON; empty: every call).
pub(super) fn guardrail(rule: &str) -> Result<(String, String), String> {
    let (tool, spec) = match rule.split_once('(') {
        Some((tool, rest)) => (tool.trim(), rest.strip_suffix(')').map(str::trim)),
        None => (rule.trim(), None),
    };
    if tool.starts_with("mcp__") {
        let tools = match tool.matches("__").count() {
            1 => format!("{}__.*", regex::escape(tool)),
            _ => tool
                .split('*')
                .map(regex::escape)
                .collect::<Vec<_>>()
                .join(".*"),
        };
        return Ok((tools, String::new()));
    }
    let Some((_, cogni)) = TOOLS.iter().find(|(name, _)| *name == tool) else {
        return Err(format!("`{tool}` is not a tool Claude Code has"));
    };
    if cogni.is_empty() {
        return Err(format!("cogni has no {tool} tool: nothing to deny"));
    }
    let spec = spec.filter(|s| !s.is_empty() && *s != "*");
    let Some(spec) = spec else {
        return Ok((cogni.join("|"), String::new()));
    };
    Ok(match tool {
        "Bash" => ("shell".into(), command_pattern(spec)),
        "WebFetch" => match spec.strip_prefix("domain:") {
            Some(host) => ("web_fetch".into(), host_pattern(host.trim())),
            None => return Err(format!("`WebFetch({spec})` is not a `domain:HOST` rule")),
        },
        "Read" => (READ_TOOLS.join("|"), path_pattern(spec)),
        "Edit" | "MultiEdit" | "Write" => (EDIT_TOOLS.join("|"), path_pattern(spec)),
        _ => (cogni.join("|"), path_pattern(spec)),
    })
}

/// The characters a command word or a path may not run on into.
const WORD_EDGE: &str = r#"(?:^|[^\w./-])"#;
const WORD_END: &str = r#"(?:$|[^\w-])"#;

/// A Bash rule's command (`npm run test:*`, `git * main`, `rm -rf`) as a
/// regex that finds it anywhere in a shell call's arguments: a rule that
/// denies also catches the command after `&&` or `;`.
fn command_pattern(spec: &str) -> String {
    let spec = spec.strip_suffix(":*").unwrap_or(spec);
    let spec = spec.trim_end_matches('*').trim_end();
    let body: Vec<String> = spec
        .split('*')
        .map(|part| {
            part.split_whitespace()
                .map(regex::escape)
                .collect::<Vec<_>>()
                .join(r"\s+")
        })
        .collect();
    format!("{WORD_EDGE}{}{WORD_END}", body.join(".*"))
}

/// A WebFetch rule's host (`example.com`, `*.example.com`) as a regex
/// over a web_fetch call's arguments: a `url` whose host is it or one of
/// its subdomains, in any case, whatever the scheme, credentials or port.
fn host_pattern(host: &str) -> String {
    let host = host.strip_prefix("*.").unwrap_or(host);
    format!(
        r#"(?i)"url"\s*:\s*"\s*[a-z][a-z0-9+.-]*://(?:[^/"@]*@)?(?:[^/"@]*\.)?{}\.?(?:[:/?#"\\]|$)"#,
        regex::escape(host)
    )
}

/// A Read or Edit rule's path (a gitignore-style glob: `./secrets/**`,
/// `~/.ssh/**`, `//etc/passwd`, `*.env`) as a regex that finds it
/// anywhere in a call's arguments (a path, or a patch's file names): it
/// may match more than the one file meant, never less.
fn path_pattern(spec: &str) -> String {
    let mut rest = spec;
    for prefix in ["//", "~/", "./", "/"] {
        if let Some(r) = rest.strip_prefix(prefix) {
            rest = r;
            break;
        }
    }
    // `dir/**` is the directory too (a search of it reads its files).
    let (rest, deep) = match rest.strip_suffix("/**") {
        Some(dir) => (dir, true),
        None => (rest, false),
    };
    let mut regex = String::from(r#"(?:^|[\s"'/=:])"#);
    let mut chars = rest.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '*' if chars.peek() == Some(&'*') => {
                chars.next();
                if chars.peek() == Some(&'/') {
                    chars.next();
                    regex.push_str(r#"(?:[^"]*/)?"#);
                } else {
                    regex.push_str(r#"[^"]*"#);
                }
            }
            '*' => regex.push_str(r#"[^/"]*"#),
            '?' => regex.push_str(r#"[^/"]"#),
            c => regex.push_str(&regex::escape(&c.to_string())),
        }
    }
    if deep {
        regex.push_str(r#"(?:/[^"]*)?"#);
    }
    if !rest.ends_with("**") {
        regex.push_str(r#"(?:$|[\s"'/,}\\])"#);
    }
    regex
}
