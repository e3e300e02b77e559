//! Redaction of known secret shapes from text cogni writes to disk
//! (session files, the log file, `-o`, `--record`): OpenAI/Anthropic-style
//! keys (`sk-...`, `sk-ant-...`), AWS access key ids (`AKIA...`,
//! `ASIA...`) and secret access keys (40 characters named
//! `aws_secret_access_key`/`SecretAccessKey`, or within 80 characters
//! after a key id), GitHub tokens (`ghp_...`, `github_pat_...`), GitLab
//! (`glpat-...`), Slack (`xoxb-...`, `xoxp-...`, ...), npm (`npm_...`) and
//! Hugging Face (`hf_...`) tokens, Google API keys (`AIza...`), bearer
//! tokens, PEM private key blocks and passwords in URLs
//! (`https://user:pass@host`). A match becomes `[REDACTED]`; a bearer
//! token keeps the word `Bearer`, a URL its user and host, an AWS secret
//! its name.
//!
//! Callers redact text before they encode it (a session line is built from
//! redacted strings). Text that is already encoded still reaches this
//! function: a tool call's arguments are JSON, a log record formats values
//! with `Debug`. So a secret counts as starting where a word could start:
//! after a character that is not a letter, digit or `_`, at the start of
//! the text, or right after an escape (`\n`, `\t`, `\u000a`, `\u{a}`,
//! ...), where `\b` alone would see the escape's letter as part of the word.
//!
//! Shapes are chosen so ordinary code stays as written: a token needs its
//! prefix and enough characters after it (`hf_hub_download`,
//! `npm_config_cache` and `xox-` are not tokens), and a URL's password is
//! left alone when it is a placeholder (`{password}`, `${PW}`, `<pw>`,
//! `%s`, `****`).

use regex::Regex;
use std::borrow::Cow;
use std::sync::OnceLock;

/// What may come right before a secret; kept as is.
const BEFORE: &str =
    r"(?P<before>^|[^A-Za-z0-9_]|\\[bfnrt0]|\\u[0-9A-Fa-f]{4}|\\u\{[0-9A-Fa-f]{1,6}\})";

/// An AWS key id followed, within 80 characters, by a 40-character secret
/// that starts after a character it cannot hold (both redacted, what lies
/// between kept and redacted on its own). Tried before [`WORD_SECRETS`],
/// which would take the id alone.
const AWS_PAIR: &str = r"(?:AKIA|ASIA)[0-9A-Z]{16}(?P<gap>[^A-Za-z0-9_/+]|[^A-Za-z0-9_][\s\S]{0,78}?[^A-Za-z0-9/+])[A-Za-z0-9/+]{40}";

/// Secrets that start a word (after [`BEFORE`]).
const WORD_SECRETS: &str = concat!(
    r"sk-(?:ant-)?[A-Za-z0-9_\-]{16,}",
    r"|(?:AKIA|ASIA)[0-9A-Z]{16}\b",
    r"|gh[pousr]_[A-Za-z0-9]{30,}",
    r"|github_pat_[A-Za-z0-9_]{22,}",
    r"|glpat-[A-Za-z0-9_\-]{20,}",
    r"|xox[abeoprs]-[A-Za-z0-9\-]{10,}",
    r"|npm_[A-Za-z0-9]{36,}",
    r"|hf_[A-Za-z0-9]{30,}",
    r"|AIza[0-9A-Za-z\-_]{35}",
);

/// Secrets found wherever they are.
const ANYWHERE: &str = concat!(
    r"(?P<pem>-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----[\s\S]*?-----END [A-Z0-9 ]*PRIVATE KEY-----)",
    r"|(?P<bearer>(?i:bearer)\s+)[A-Za-z0-9\-._~+/]{8,}=*",
    // `scheme://user:` then the password, up to the `@` before the host.
    r#"|(?P<userinfo>[A-Za-z][A-Za-z0-9+.\-]*://[^\s:/@?#'"\\]*:)(?P<password>[^\s/@?#'"\\]+)@"#,
    // An AWS secret's name, maybe quoted (the quote maybe escaped), `=` or
    // `:`, maybe a quote, the secret.
    r#"|(?P<aws_name>(?i:(?:aws_?)?secret_?access_?key)(?:\\?["'])?\s*[:=]\s*(?:\\?["'])?)"#,
    r"[A-Za-z0-9/+]{40}",
);

fn pattern() -> Option<&'static Regex> {
    static RE: OnceLock<Option<Regex>> = OnceLock::new();
    RE.get_or_init(|| Regex::new(&format!("{ANYWHERE}|{BEFORE}(?:{AWS_PAIR}|{WORD_SECRETS})")).ok())
        .as_ref()
}

/// A URL's password that only stands for one: a template's field, a
/// variable, a format directive, a mask.
fn placeholder(password: &str) -> bool {
    password.starts_with(['{', '$', '<'])
        || password == "%s"
        || password.starts_with("%(")
        || password.chars().all(|c| c == '*')
}

/// `text` with every known secret shape replaced by `[REDACTED]`.
pub fn redact(text: &str) -> Cow<'_, str> {
    let Some(re) = pattern() else {
        // The pattern is a constant that compiles (tested); never reached.
        return Cow::Borrowed(text);
    };
    re.replace_all(text, |caps: &regex::Captures<'_>| {
        if let (Some(userinfo), Some(password)) = (caps.name("userinfo"), caps.name("password")) {
            let password = password.as_str();
            let shown = if placeholder(password) {
                password
            } else {
                "[REDACTED]"
            };
            return format!("{}{shown}@", userinfo.as_str());
        }
        if let Some(gap) = caps.name("gap") {
            let before = caps.name("before").map_or("", |m| m.as_str());
            return format!("{before}[REDACTED]{}[REDACTED]", redact(gap.as_str()));
        }
        let kept = caps
            .name("bearer")
            .or_else(|| caps.name("aws_name"))
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
            ("x glpat-AbCdEf0123456789_-xyZ y", "x [REDACTED] y"),
            ("SLACK=xoxb-1234567890-abcdefGHIJ", "SLACK=[REDACTED]"),
            ("t=xoxp-12345-67890-abcdef", "t=[REDACTED]"),
            ("npm_AbCdEfGhIjKlMnOpQrStUvWxYz0123456789", "[REDACTED]"),
            ("HF_TOKEN=hf_AbCdEfGhIjKlMnOpQrStUvWxYz01234567", "HF_TOKEN=[REDACTED]"),
            (
                "postgres://app:s3cr%40t!@db.internal:5432/prod",
                "postgres://app:[REDACTED]@db.internal:5432/prod",
            ),
            (
                "git clone https://oauth2:tok3n@gitlab.example.com/g/r.git",
                "git clone https://oauth2:[REDACTED]@gitlab.example.com/g/r.git",
            ),
            ("redis://:hunter2@cache:6379", "redis://:[REDACTED]@cache:6379"),
            (
                "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
                "aws_secret_access_key = [REDACTED]",
            ),
            (
                "export AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
                "export AWS_SECRET_ACCESS_KEY=[REDACTED]",
            ),
            (
                r#"{"SecretAccessKey": "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"}"#,
                r#"{"SecretAccessKey": "[REDACTED]"}"#,
            ),
            (
                "bob,,AKIAIOSFODNN7EXAMPLE,wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY,x",
                "bob,,[REDACTED],[REDACTED],x",
            ),
            (
                "AKIAIOSFODNN7EXAMPLE\nwJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
                "[REDACTED]\n[REDACTED]",
            ),
            (
                "id AKIAIOSFODNN7EXAMPLE with Bearer abcdefgh12345 then wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
                "id [REDACTED] with Bearer [REDACTED] then [REDACTED]",
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
        "glpat-AbCdEf0123456789_-xyZ",
        "xoxb-1234567890-abcdefGHIJ",
        "xoxa-2-abcdefghijklmnop",
        "npm_AbCdEfGhIjKlMnOpQrStUvWxYz0123456789",
        "hf_AbCdEfGhIjKlMnOpQrStUvWxYz01234567",
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
    fn url_passwords_and_aws_secrets_are_redacted_once_encoded_too() {
        let secret = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY";
        for (text, gone, kept) in [
            (
                "postgres://app:pw-12345@db.internal/prod",
                "pw-12345",
                "postgres://app:",
            ),
            ("line\nhttps://u:p4ss@h.example/x", "p4ss", "@h.example/x"),
            (
                &*format!("aws_secret_access_key = {secret}"),
                secret,
                "aws_secret_access_key = ",
            ),
            (
                &*format!("\"SecretAccessKey\": \"{secret}\""),
                secret,
                "SecretAccessKey",
            ),
            (&*format!("AKIAIOSFODNN7EXAMPLE\t{secret}"), secret, "\t"),
        ] {
            let json = serde_json::json!({ "output": text }).to_string();
            let debug = format!("{text:?}");
            for encoded in [json, debug] {
                let clean = redact(&encoded);
                assert!(!clean.contains(gone), "{encoded} -> {clean}");
                assert!(clean.contains("[REDACTED]"), "{encoded} -> {clean}");
            }
            let clean = redact(text);
            assert!(clean.contains(kept), "{text} -> {clean}");
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
            // Realistic code that looks a little like the new shapes.
            "from huggingface_hub import hf_hub_download, hf_hub_url",
            "npm_config_cache=/tmp/npm npm_package_version=1.2.3",
            "const prefix = \"xoxb-\"; // slack bot tokens start so",
            "glpat-short",
            "ssh://git@github.com:22/org/repo.git git@github.com:org/repo.git",
            "http://localhost:8080/path?next=a@b https://example.com:443/x",
            "url = f\"postgresql://{user}:{password}@{host}/{db}\"",
            "DATABASE_URL=postgres://app:${DB_PASSWORD}@db:5432/app",
            "\"mysql://%s:%s@%s/%s\" % (user, pw, host, db)",
            "shown as https://bob:****@example.com",
            "see <scheme>://<user>:<password>@<host>",
            "commit 3f2a9c0d1e2b3a4f5061728394a5b6c7d8e9f001 on main",
            "aws_secret_access_key = <your secret key>",
            "AKIA_EXAMPLE_PREFIX: wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
        ] {
            assert_eq!(redact(text), text);
        }
    }
}
