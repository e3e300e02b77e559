//! A review as SARIF 2.1.0, for GitHub code scanning, GitLab and any
//! SARIF viewer: one rule per priority (P0..P3), each finding a result
//! with its location (a region of whole lines, with the code as its
//! snippet), a partial fingerprint that stays the same across pushes
//! while the code does, and its fix as a SARIF `fix` of whole-line
//! replacements.
//!
//! Locations are relative to the repository's root (`uriBaseId`
//! `SRCROOT`). A finding on deleted lines points at the new-side line
//! where they stood (its `properties` keep the old lines); a finding about
//! a whole file (no lines) points at its line 1, as code scanning needs a
//! line.

use super::Review;
use cogni_tools::review::{Finding, Side};
use serde_json::{json, Value};

/// The partial fingerprint's key.
pub const FINGERPRINT_KEY: &str = "cogniFindingHash/v1";

/// Each priority's rule: id, name, level, description.
const RULES: [(&str, &str, &str, &str); 4] = [
    (
        "P0",
        "CriticalFinding",
        "error",
        "Breaks something now: fix it at once.",
    ),
    (
        "P1",
        "MustFixFinding",
        "error",
        "Must be fixed before the change is merged.",
    ),
    ("P2", "ShouldFixFinding", "warning", "Should be fixed."),
    ("P3", "MinorFinding", "note", "A minor point."),
];

/// The SARIF log of `review` (pretty JSON, ending with a newline).
pub fn sarif(review: &Review) -> String {
    let version = env!("CARGO_PKG_VERSION");
    let rules: Vec<Value> = RULES
        .iter()
        .map(|(id, name, level, text)| {
            json!({
                "id": id,
                "name": name,
                "shortDescription": {"text": format!("{id}: {text}")},
                "fullDescription": {"text": format!(
                    "A problem a cogni review found at priority {id}. {text}"
                )},
                "defaultConfiguration": {"level": level},
                "help": {"text": format!(
                    "{text} The result's message says what is wrong; its fix, when given, is the reviewer's suggestion."
                )},
                "properties": {"tags": ["review"]}
            })
        })
        .collect();
    let results: Vec<Value> = review.findings.iter().map(result).collect();
    let mut run = json!({
        "tool": {"driver": {
            "name": "cogni",
            "fullName": "cogni review",
            "version": version,
            "semanticVersion": version,
            "rules": rules
        }},
        "automationDetails": {"id": "cogni-review/"},
        "columnKind": "unicodeCodePoints",
        "results": results
    });
    if let Some(head) = &review.head {
        run["properties"] = json!({"head": head, "base": review.base});
    }
    let log = json!({
        "$schema": "https://json.schemastore.org/sarif-2.1.0.json",
        "version": "2.1.0",
        "runs": [run]
    });
    serde_json::to_string_pretty(&log).unwrap_or_default() + "\n"
}

fn result(f: &Finding) -> Value {
    let rule = usize::from(f.priority.min(3));
    let (start, end) = match (f.side, f.anchor_line) {
        _ if f.whole_file() => (1, 1),
        (Side::Old, Some(anchor)) => (anchor, anchor),
        _ => (f.start_line, f.end_line),
    };
    let mut region = json!({"startLine": start, "endLine": end});
    let snippet =
        matches!(f.side, Side::New) && !f.whole_file() && f.code.len() as u32 == end - start + 1;
    if snippet {
        let text: Vec<&str> = f.code.iter().map(|c| c.text.as_str()).collect();
        region["snippet"] = json!({"text": text.join("\n")});
    }
    let mut message = format!("{}\n\n{}", f.title, f.body);
    if f.side == Side::Old {
        message.push_str(&format!(
            "\n\n(On lines {}-{} of the old version, which the change deleted.)",
            f.start_line, f.end_line
        ));
    }
    let mut value = json!({
        "ruleId": RULES[rule].0,
        "ruleIndex": rule,
        "level": RULES[rule].2,
        "message": {"text": message},
        "locations": [{"physicalLocation": {
            "artifactLocation": location(&f.path),
            "region": region
        }}],
        "partialFingerprints": {FINGERPRINT_KEY: f.fingerprint},
        "properties": {
            "priority": f.priority_name(),
            "confidence": f.confidence,
            "side": f.side.as_str(),
            "startLine": f.start_line,
            "endLine": f.end_line
        }
    });
    if let Some(fix) = &f.fix {
        let replacements: Vec<Value> = fix
            .replacements
            .iter()
            .map(|r| {
                json!({
                    "deletedRegion": {"startLine": r.start_line, "endLine": r.end_line},
                    "insertedContent": {"text": r.text}
                })
            })
            .collect();
        value["fixes"] = json!([{
            "description": {"text": format!("Suggested fix: {}", f.title)},
            "artifactChanges": [{
                "artifactLocation": location(&f.path),
                "replacements": replacements
            }]
        }]);
    }
    value
}

fn location(path: &str) -> Value {
    json!({"uri": uri(path), "uriBaseId": "SRCROOT"})
}

/// `path` as a relative URI reference: every byte but the unreserved
/// characters and `/` percent-encoded.
pub fn uri(path: &str) -> String {
    let mut out = String::with_capacity(path.len());
    for b in path.bytes() {
        if b.is_ascii_alphanumeric() || b"-._~/".contains(&b) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}
