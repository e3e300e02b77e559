//! The known-safe command classifier and its shell tokenizer
//! (`tools::safety`).
//!
//! Input: a shell script (inputs that are not UTF-8 are skipped). Checked,
//! besides "no panic":
//!
//! - a script the tokenizer refuses is never known-safe, and a known-safe
//!   script holds no control character but tab;
//! - a known-safe script's words, run as an argv, are known-safe too (the
//!   script can only be stricter: its words may be globs);
//! - quoting round trip: the words written back with single quotes, with
//!   double quotes and with a backslash before every character tokenize to
//!   the same words (none a glob), and each of those scripts is known-safe
//!   exactly when the words as an argv are.
#![no_main]

use cogni::fuzzing::shell_words;
use cogni::tools::safety::{is_known_safe, Command};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(script) = std::str::from_utf8(data) else {
        return;
    };
    let safe = is_known_safe(&Command::Shell(script));
    let Some(words) = shell_words(script) else {
        assert!(!safe, "refused by the tokenizer but known-safe: {script:?}");
        return;
    };
    if safe {
        assert!(
            !script
                .bytes()
                .any(|b| (b < 0x20 && b != b'\t') || b == 0x7f),
            "a control character in a known-safe script: {script:?}"
        );
    }
    let argv: Vec<String> = words.iter().map(|(text, _)| text.clone()).collect();
    let argv_safe = is_known_safe(&Command::Argv(&argv));
    if safe {
        assert!(
            argv_safe,
            "{script:?} is known-safe, its words {argv:?} are not"
        );
    }
    let plain: Vec<(String, bool)> = argv.iter().map(|w| (w.clone(), false)).collect();
    for quote in [single, double, escaped] {
        let requoted = argv.iter().map(|w| quote(w)).collect::<Vec<_>>().join(" ");
        assert_eq!(
            shell_words(&requoted).as_ref(),
            Some(&plain),
            "{script:?} requoted as {requoted:?}"
        );
        assert_eq!(
            is_known_safe(&Command::Shell(&requoted)),
            argv_safe,
            "{requoted:?} and the argv {argv:?} disagree"
        );
    }
});

fn single(word: &str) -> String {
    format!("'{}'", word.replace('\'', r"'\''"))
}

fn double(word: &str) -> String {
    let mut out = String::from("\"");
    for c in word.chars() {
        if matches!(c, '"' | '\\' | '$' | '`') {
            out.push('\\');
        }
        out.push(c);
    }
    out.push('"');
    out
}

fn escaped(word: &str) -> String {
    if word.is_empty() {
        return "''".to_string();
    }
    word.chars().flat_map(|c| ['\\', c]).collect()
}
