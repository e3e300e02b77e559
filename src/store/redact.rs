//! Secrets out of text before it is written to disk: the session's own
//! keys, and well-known key shapes (OpenAI/Anthropic `sk-…`, GitHub
//! tokens, Slack tokens, AWS access key ids, Google API keys, bearer
//! tokens, PEM private keys).
//!
//! Works on any text, including a serialised JSON line: the replacement
//! and every matched character are JSON-safe, so the line stays valid.

use std::borrow::Cow;

pub const REDACTED: &str = "[REDACTED]";

/// A known secret shape: a prefix, the characters of its body, and the
/// fewest body characters that make it a secret.
struct Shape {
    prefix: &'static str,
    body: fn(u8) -> bool,
    min: usize,
}

fn token_char(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_' || b == b'-'
}

fn upper_or_digit(b: u8) -> bool {
    b.is_ascii_uppercase() || b.is_ascii_digit()
}

fn bearer_char(b: u8) -> bool {
    token_char(b) || matches!(b, b'.' | b'~' | b'+' | b'/' | b'=')
}

const SHAPES: &[Shape] = &[
    Shape {
        prefix: "sk-",
        body: token_char,
        min: 20,
    },
    Shape {
        prefix: "ghp_",
        body: token_char,
        min: 20,
    },
    Shape {
        prefix: "gho_",
        body: token_char,
        min: 20,
    },
    Shape {
        prefix: "ghu_",
        body: token_char,
        min: 20,
    },
    Shape {
        prefix: "ghs_",
        body: token_char,
        min: 20,
    },
    Shape {
        prefix: "github_pat_",
        body: token_char,
        min: 20,
    },
    Shape {
        prefix: "xoxb-",
        body: token_char,
        min: 10,
    },
    Shape {
        prefix: "xoxp-",
        body: token_char,
        min: 10,
    },
    Shape {
        prefix: "xoxa-",
        body: token_char,
        min: 10,
    },
    Shape {
        prefix: "AKIA",
        body: upper_or_digit,
        min: 16,
    },
    Shape {
        prefix: "AIza",
        body: token_char,
        min: 30,
    },
    Shape {
        prefix: "Bearer ",
        body: bearer_char,
        min: 16,
    },
];

const PEM_BEGIN: &str = "-----BEGIN ";
const PEM_KEY: &str = "PRIVATE KEY-----";
const PEM_END: &str = "-----END ";

/// `text` with `secrets` (exact values, e.g. the provider's API key) and
/// known secret shapes replaced by `[REDACTED]`.
pub fn redact<'a>(text: &'a str, secrets: &[String]) -> Cow<'a, str> {
    let mut out: Cow<'a, str> = Cow::Borrowed(text);
    for secret in secrets.iter().filter(|s| s.len() >= 8) {
        if out.contains(secret.as_str()) {
            out = Cow::Owned(out.replace(secret.as_str(), REDACTED));
        }
    }
    match redact_shapes(&out) {
        Some(clean) => Cow::Owned(clean),
        None => out,
    }
}

/// The text with known shapes replaced, `None` when there were none.
fn redact_shapes(text: &str) -> Option<String> {
    let bytes = text.as_bytes();
    let mut out = String::new();
    let mut copied = 0;
    let mut i = 0;
    while i < bytes.len() {
        let at_boundary = text.is_char_boundary(i) && (i == 0 || !token_char(bytes[i - 1]));
        let end = if at_boundary { match_at(text, i) } else { None };
        match end {
            Some(end) => {
                out.push_str(&text[copied..i]);
                out.push_str(REDACTED);
                copied = end;
                i = end;
            }
            None => i += 1,
        }
    }
    if copied == 0 {
        return None;
    }
    out.push_str(&text[copied..]);
    Some(out)
}

/// The end of a secret starting at byte `i`, if one does.
fn match_at(text: &str, i: usize) -> Option<usize> {
    let rest = &text[i..];
    if rest.starts_with(PEM_BEGIN) {
        let header_end = rest.find(PEM_KEY)? + PEM_KEY.len();
        // The header must be one line: "-----BEGIN RSA PRIVATE KEY-----".
        if rest[..header_end].contains(['\n', '\\']) {
            return None;
        }
        let end_marker = rest[header_end..].find(PEM_END)? + header_end;
        let tail = rest[end_marker..].find(PEM_KEY)? + end_marker + PEM_KEY.len();
        return Some(i + tail);
    }
    let bytes = rest.as_bytes();
    for shape in SHAPES {
        if !rest.starts_with(shape.prefix) {
            continue;
        }
        let body = bytes[shape.prefix.len()..]
            .iter()
            .take_while(|b| (shape.body)(**b))
            .count();
        if body >= shape.min {
            return Some(i + shape.prefix.len() + body);
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_shapes_and_exact_keys_are_redacted() {
        let key = "sk-proj-abcdefghijklmnopqrstuvwxyz0123";
        let text = format!("export OPENAI_API_KEY={key} and more");
        assert_eq!(
            redact(&text, &[]),
            "export OPENAI_API_KEY=[REDACTED] and more"
        );
        assert_eq!(
            redact("token ghp_0123456789abcdefghijABCDEFGHIJ end", &[]),
            "token [REDACTED] end"
        );
        assert_eq!(
            redact("AKIAIOSFODNN7EXAMPLE", &[]),
            "[REDACTED]",
            "AWS access key id"
        );
        assert_eq!(
            redact(
                r#"{"h":"Authorization: Bearer abc.def-ghi_jkl+mno/pq="}"#,
                &[]
            ),
            r#"{"h":"Authorization: [REDACTED]"}"#
        );
        assert_eq!(
            redact(
                "key=custom-secret-value-42!",
                &["custom-secret-value-42".into()]
            ),
            "key=[REDACTED]!"
        );
        let pem = r"a -----BEGIN RSA PRIVATE KEY-----\nMIIEow\n-----END RSA PRIVATE KEY----- b";
        assert_eq!(redact(pem, &[]), "a [REDACTED] b");
    }

    #[test]
    fn ordinary_text_is_left_alone() {
        for text in [
            "the task-abcdefghijklmnopqrstuvwxyz is done",
            "sk-short",
            "Bearer token",
            "ask-me-anything-abcdefghijklmnopqrstu",
            "héllo wörld",
        ] {
            assert!(matches!(redact(text, &[]), Cow::Borrowed(_)), "{text}");
        }
    }
}
