//! `[model_aliases]`: short names for models (`fast = "gpt-4.1-mini"`).
//! A selected model (`--model`, `model`, `/model`, a task's agent) that is
//! an alias stands for its model; the system prompt lists the aliases when
//! more than one is configured.

use super::ConfigError;
use std::collections::BTreeMap;

/// Check every alias: a name of letters, digits, `.`, `_` or `-`; a model
/// that is not empty, has no whitespace and is not itself an alias.
pub fn validate(aliases: &BTreeMap<String, String>) -> Result<(), ConfigError> {
    for (alias, model) in aliases {
        let fail = |m: &str| {
            Err(ConfigError(format!(
                "[model_aliases] {alias} = {model:?}: {m}"
            )))
        };
        if alias.is_empty()
            || !alias
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || "._-".contains(c))
        {
            return fail("an alias is made of letters, digits, `.`, `_` and `-`");
        }
        if model.trim().is_empty() || model.chars().any(char::is_whitespace) {
            return fail(
                "the model must be a model name without spaces, e.g. fast = \"gpt-4.1-mini\"",
            );
        }
        if aliases.contains_key(model) {
            return fail(&format!(
                "`{model}` is an alias too; an alias must name a model, not another alias"
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn aliases(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(a, m)| (a.to_string(), m.to_string()))
            .collect()
    }

    #[test]
    fn good_aliases_pass_and_bad_ones_say_why() {
        validate(&aliases(&[
            ("fast", "gpt-4.1-mini"),
            ("or.deep", "openai/o3"),
        ]))
        .unwrap();
        for (pairs, expected) in [
            (vec![("fast one", "gpt-4.1")], "letters, digits"),
            (vec![("", "gpt-4.1")], "letters, digits"),
            (vec![("fast", " ")], "without spaces"),
            (vec![("fast", "gpt 4")], "without spaces"),
            (
                vec![("fast", "quick"), ("quick", "gpt-4.1-mini")],
                "alias too",
            ),
            (vec![("loop", "loop")], "alias too"),
        ] {
            let e = validate(&aliases(&pairs)).unwrap_err().to_string();
            assert!(e.starts_with("[model_aliases] "), "{e}");
            assert!(e.contains(expected), "{pairs:?}: {e}");
        }
    }
}
