//! The annotated example configuration, built into the binary
//! (`cogni config example` prints it), and what errors learn from it: the
//! key paths a cogni.toml may hold, to suggest the one a misspelled key
//! meant.

/// `cogni.toml.example`: every key, each with what it does.
pub const EXAMPLE: &str = include_str!("../../../cogni.toml.example");

/// Every key path the example shows, set or commented out
/// (`tools.shell_timeout_ms`, `model_providers.*.base_url`): a table
/// header's names that stand for a name of the user's own (a provider, a
/// server, an agent, a family) become `*`.
pub fn known_keys() -> Vec<String> {
    let mut keys = Vec::new();
    let mut table = String::new();
    for line in EXAMPLE.lines() {
        let line = line.trim_start_matches('#').trim();
        if let Some(header) = line
            .strip_prefix("[[")
            .and_then(|h| h.split("]]").next())
            .or_else(|| line.strip_prefix('[').and_then(|h| h.split(']').next()))
        {
            if header
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || "._-\"/*".contains(c))
            {
                table = generic(header);
                keys.push(table.clone());
            }
            continue;
        }
        let Some((key, _)) = line.split_once('=') else {
            continue;
        };
        let key = key.trim();
        if key.is_empty() || !key.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
            continue;
        }
        keys.push(if table.is_empty() {
            key.to_string()
        } else {
            format!("{table}.{key}")
        });
    }
    keys.sort();
    keys.dedup();
    keys
}

/// Tables whose second name is the user's own.
const NAMED: &[&str] = &[
    "profiles",
    "model_providers",
    "model_families",
    "mcp_servers",
    "agents",
    "model_aliases",
    "hooks",
];

/// `header` with a user's own name as `*`.
fn generic(header: &str) -> String {
    let mut parts: Vec<String> = split_key(header);
    if parts.len() >= 2 && NAMED.contains(&parts[0].as_str()) {
        parts[1] = "*".into();
    }
    parts.join(".")
}

/// The names of a dotted key (quoted names kept whole).
fn split_key(key: &str) -> Vec<String> {
    let mut parts = Vec::new();
    let mut current = String::new();
    let mut quoted = false;
    for c in key.chars() {
        match c {
            '"' => quoted = !quoted,
            '.' if !quoted => parts.push(std::mem::take(&mut current)),
            c => current.push(c),
        }
    }
    parts.push(current);
    parts
}

/// The known key closest to `unknown` (a full path, as the error names
/// it), when one is close enough to be what was meant.
pub fn suggestion(unknown: &str) -> Option<String> {
    let parts = split_key(unknown);
    let generic_path = {
        let mut p = parts.clone();
        if p.len() >= 2 && NAMED.contains(&p[0].as_str()) {
            p[1] = "*".into();
        }
        p.join(".")
    };
    let known = known_keys();
    let best = known
        .iter()
        .map(|k| (distance(k, &generic_path), k))
        .min_by_key(|(d, _)| *d)?;
    let last = parts.last().map_or(0, |p| p.len());
    if best.0 == 0 || best.0 > (last / 3).max(2) {
        return None;
    }
    // Put the user's own name back where the example has `*`.
    let mut shown = split_key(best.1);
    if shown.len() >= 2 && shown[1] == "*" && parts.len() >= 2 {
        shown[1] = parts[1].clone();
    }
    Some(shown.join("."))
}

/// Levenshtein distance.
fn distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut prev = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let old = row[j + 1];
            row[j + 1] = (old + 1).min(row[j] + 1).min(prev + usize::from(ca != *cb));
            prev = old;
        }
    }
    row[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_example_shows_keys_set_and_commented_out() {
        let keys = known_keys();
        for key in [
            "model",
            "base_instructions_file",
            "tools.shell_timeout_ms",
            "tools.shell_env.inherit",
            "tools.web_fetch.allowed_domains",
            "agent.max_context_bytes",
            "model_providers.*.base_url",
            "mcp_servers.*.command",
            "run.output_guardrail.regex",
            "hooks.*.command",
            // Top-level keys shown after a table header would read as
            // that table's (and uncommented there, they would be).
            "context_strategy",
            "effects",
            "model_families.*.input_price",
        ] {
            assert!(keys.contains(&key.to_string()), "{key} missing: {keys:?}");
        }
    }

    #[test]
    fn a_misspelled_key_gets_the_one_it_meant() {
        assert_eq!(suggestion("sandbx").as_deref(), Some("sandbox"));
        assert_eq!(
            suggestion("tools.shel_timeout_ms").as_deref(),
            Some("tools.shell_timeout_ms")
        );
        assert_eq!(
            suggestion("model_providers.mine.base_ur").as_deref(),
            Some("model_providers.mine.base_url")
        );
        assert_eq!(suggestion("completely_unrelated_thing"), None);
    }
}
