//! Redaction of known secret shapes from text cogni writes to disk
//! (session files, the log file, `-o`): OpenAI/Anthropic-style keys
//! (`sk-...`, `sk-ant-...`), AWS access key ids (`AKIA...`, `ASIA...`),
//! GitHub tokens (`ghp_...`, `github_pat_...`), Google API keys
//! (`AIza...`), bearer tokens and PEM private key blocks. A match becomes
//! `[REDACTED]`; for bearer tokens the word `Bearer` stays.
//!
//! Callers redact text before they encode it (a session line is built from
//! redacted strings). Text that is already encoded still reaches this
//! function: a tool call's arguments are JSON, a log record formats values
//! with `Debug`. So a secret counts as starting where a word could start:
//! after a character that is not a letter, digit or `_`, at the start of
//! the text, or right after an escape (`\n`, `\t`, `\u000a`, `\u{a}`,
//! ...), where `\b` alone would see the escape's letter as part of the word.

use regex::Regex;
use std::borrow::Cow;
use std::sync::OnceLock;

/// What may come right before a secret; kept as is.
const BEFORE: &str =
    r"(?P<before>^|[^A-Za-z0-9_]|\\[bfnrt0]|\\u[0-9A-Fa-f]{4}|\\u\{[0-9A-Fa-f]{1,6}\})";

/// Secrets that start a word (after [`BEFORE`]).
const WORD_SECRETS: &str = concat!(
    r"sk-(?:ant-)?[A-Za-z0-9_\-]{16,}",
    r"|(?:AKIA|ASIA)[0-9A-Z]{16}\b",
    r"|gh[pousr]_[A-Za-z0-9]{30,}",
    r"|github_pat_[A-Za-z0-9_]{22,}",
    r"|AIza[0-9A-Za-z\-_]{35}",
);

/// Secrets found wherever they are.
const ANYWHERE: &str = concat!(
    r"(?P<pem>-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----[\s\S]*?-----END [A-Z0-9 ]*PRIVATE KEY-----)",
    r"|(?P<bearer>(?i:bearer)\s+)[A-Za-z0-9\-._~+/]{8,}=*",
);

fn pattern() -> Option<&'static Regex> {
    static RE: OnceLock<Option<Regex>> = OnceLock::new();
    RE.get_or_init(|| Regex::new(&format!("{ANYWHERE}|{BEFORE}(?:{WORD_SECRETS})")).ok())
        .as_ref()
}

/// `text` with every known secret shape replaced by `[REDACTED]`.
pub fn redact(text: &str) -> Cow<'_, str> {
    let Some(re) = pattern() else {
        // The pattern is a constant that compiles (tested); never reached.
        return Cow::Borrowed(text);
    };
    re.replace_all(text, |caps: &regex::Captures<'_>| {
        let kept = caps
            .name("bearer")
            .or_else(|| caps.name("before"))
            .map_or("", |m| m.as_str());
        format!("{kept}[REDACTED]")
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

    /// One example of every secret shape.
    const SECRETS: &[&str] = &[
        "sk-abcdefghijklmnop1234",
        "sk-proj-AbC_123-xyzXYZ0987654321",
        "sk-ant-api03-abcdefghijklmnopqrstuv",
        "AKIAIOSFODNN7EXAMPLE",
        "ASIAIOSFODNN7EXAMPLE",
        "ghp_abcdefghijklmnopqrstuvwxyz0123456789",
        "gho_abcdefghijklmnopqrstuvwxyz0123456789",
        "github_pat_11ABCDEFG0123456789_abcdefghijklmnop",
        "AIzaSyA1234567890abcdefghijklmnopqrstuv",
        "Bearer eyJhbGciOi.JIUzI1NiJ9.abc",
        "-----BEGIN RSA PRIVATE KEY-----\nMIIEow\nAAAA\n-----END RSA PRIVATE KEY-----",
    ];

    /// The part of a secret that must not survive (a bearer token keeps
    /// its word, a PEM block is checked by its body).
    fn core(secret: &str) -> &str {
        secret
            .strip_prefix("Bearer ")
            .unwrap_or(if secret.starts_with("-----") {
                "MIIEow"
            } else {
                secret
            })
    }

    #[test]
    fn every_shape_is_redacted_wherever_it_stands() {
        for secret in SECRETS {
            let raw = [
                secret.to_string(),
                format!("first line\n{secret}\nlast line"),
                format!("key:\t{secret}"),
                format!("the end is {secret}"),
                format!("crlf\r\n{secret}\r\n"),
                format!("({secret})"),
            ];
            for text in &raw {
                let clean = redact(text);
                assert!(!clean.contains(core(secret)), "{text:?} -> {clean:?}");
                assert!(clean.contains("[REDACTED]"), "{text:?} -> {clean:?}");
            }
            // Already encoded: JSON (a tool call's arguments, an escaped
            // newline or tab before the secret) and `Debug` (log records).
            for text in &raw {
                let json = serde_json::json!({ "command": text }).to_string();
                let clean = redact(&json);
                assert!(!clean.contains(core(secret)), "{json} -> {clean}");
                let back: serde_json::Value = serde_json::from_str(&clean).unwrap();
                assert!(back["command"].as_str().unwrap().contains("[REDACTED]"));
                let debug = format!("{text:?}");
                let clean = redact(&debug);
                assert!(!clean.contains(core(secret)), "{debug} -> {clean}");
            }
            let unicode = format!("\"x\\u000a{secret}\"");
            assert!(!redact(&unicode).contains(core(secret)), "{unicode}");
        }
    }

    #[test]
    fn what_comes_before_a_secret_is_kept() {
        assert_eq!(
            redact("a\\nghp_abcdefghijklmnopqrstuvwxyz0123456789 b"),
            "a\\n[REDACTED] b"
        );
        assert_eq!(redact("x=AKIAIOSFODNN7EXAMPLE\tz"), "x=[REDACTED]\tz");
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
            "basksk-abcdefghijklmnop1234 xghp_abcdefghijklmnopqrstuvwxyz0123456789",
            "the \\n escape alone, \\task-abcdefghijklmnop1234",
        ] {
            assert!(matches!(redact(text), Cow::Borrowed(_)), "{text}");
        }
    }
}
