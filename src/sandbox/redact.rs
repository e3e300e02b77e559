//! Redaction of known secret shapes from text cogni writes to disk (the
//! log file, `-o`): OpenAI/Anthropic-style keys (`sk-...`, `sk-ant-...`),
//! AWS access key ids (`AKIA...`, `ASIA...`), GitHub tokens (`ghp_...`,
//! `github_pat_...`), Google API keys (`AIza...`), bearer tokens and PEM
//! private key blocks. A match becomes `[REDACTED]`; for bearer tokens the
//! word `Bearer` stays.

use regex::Regex;
use std::borrow::Cow;
use std::sync::OnceLock;

const PATTERN: &str = concat!(
    r"(?P<pem>-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----[\s\S]*?-----END [A-Z0-9 ]*PRIVATE KEY-----)",
    r"|(?P<bearer>(?i:bearer)\s+)[A-Za-z0-9\-._~+/]{8,}=*",
    r"|\bsk-(?:ant-)?[A-Za-z0-9_\-]{16,}",
    r"|\b(?:AKIA|ASIA)[0-9A-Z]{16}\b",
    r"|\bgh[pousr]_[A-Za-z0-9]{30,}",
    r"|\bgithub_pat_[A-Za-z0-9_]{22,}",
    r"|\bAIza[0-9A-Za-z\-_]{35}",
);

fn pattern() -> Option<&'static Regex> {
    static RE: OnceLock<Option<Regex>> = OnceLock::new();
    RE.get_or_init(|| Regex::new(PATTERN).ok()).as_ref()
}

/// `text` with every known secret shape replaced by `[REDACTED]`.
pub fn redact(text: &str) -> Cow<'_, str> {
    let Some(re) = pattern() else {
        // The pattern is a constant that compiles (tested); never reached.
        return Cow::Borrowed(text);
    };
    re.replace_all(text, |caps: &regex::Captures<'_>| {
        match caps.name("bearer") {
            Some(word) => format!("{}[REDACTED]", word.as_str()),
            None => "[REDACTED]".to_string(),
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_pattern_compiles() {
        assert!(pattern().is_some());
    }

    #[test]
    fn known_shapes_are_redacted() {
        let cases = [
            ("key sk-abcdefghijklmnop1234 end", "key [REDACTED] end"),
            ("sk-proj-AbC_123-xyzXYZ0987654321", "[REDACTED]"),
            ("x=sk-ant-api03-abcdefghijklmnopqrstuv", "x=[REDACTED]"),
            ("AKIAIOSFODNN7EXAMPLE", "[REDACTED]"),
            ("t ghp_abcdefghijklmnopqrstuvwxyz0123456789 t", "t [REDACTED] t"),
            (
                "github_pat_11ABCDEFG0123456789_abcdefghijklmnop",
                "[REDACTED]",
            ),
            (
                "Authorization: Bearer eyJhbGciOi.JIUzI1NiJ9.abc",
                "Authorization: Bearer [REDACTED]",
            ),
            ("authorization: bearer abcdefgh12345", "authorization: bearer [REDACTED]"),
            (
                "a\n-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXk\nAAAA\n-----END OPENSSH PRIVATE KEY-----\nz",
                "a\n[REDACTED]\nz",
            ),
            (
                "-----BEGIN PRIVATE KEY-----\nMIIE\n-----END PRIVATE KEY-----",
                "[REDACTED]",
            ),
        ];
        for (input, want) in cases {
            assert_eq!(redact(input), want, "{input}");
        }
    }

    #[test]
    fn ordinary_text_is_untouched() {
        for text in [
            "ask-me anything",
            "task-1234567890abcdefgh",
            "sk-short",
            "the bearer of bad news",
            "-----BEGIN PUBLIC KEY-----\nMII\n-----END PUBLIC KEY-----",
            "AKIA lowercase akiaiosfodnn7example",
        ] {
            assert!(matches!(redact(text), Cow::Borrowed(_)), "{text}");
        }
    }
}
