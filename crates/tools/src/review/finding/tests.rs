use super::*;
use crate::review::diff::{new_file, parse};

/// `src/a.rs` modified (new lines 1-3 and 10-12 shown, old line 2
/// deleted), `gone.txt` deleted, `new.rs` renamed from `old.rs`, a binary
/// `logo.png`.
fn diff() -> ScopeDiff {
    let raw = b":100644 100644 1 2 M\0src/a.rs\0\
:100644 000000 3 0 D\0gone.txt\0\
:100644 100644 4 5 R090\0old.rs\0new.rs\0";
    let patch = "diff --git a/src/a.rs b/src/a.rs
--- a/src/a.rs
+++ b/src/a.rs
@@ -1,3 +1,3 @@
 one
-two
+2
 three
@@ -10,2 +10,3 @@
 ten
+ten and a half
 eleven
diff --git a/gone.txt b/gone.txt
--- a/gone.txt
+++ /dev/null
@@ -1 +0,0 @@
-bye
diff --git a/old.rs b/new.rs
rename from old.rs
rename to new.rs
--- a/old.rs
+++ b/new.rs
@@ -3 +3 @@
-x
+y
";
    let mut files = parse(raw, patch.as_bytes()).unwrap();
    files.push(new_file("logo.png".into(), Ok(b"\x89PNG\0".to_vec())));
    ScopeDiff { files }
}

fn args(path: &str, start: i64, end: i64) -> FindingArgs {
    FindingArgs {
        path: path.into(),
        start_line: start,
        end_line: end,
        priority: 1,
        title: "Off by one".into(),
        body: "The loop stops one early.".into(),
        confidence: 0.8,
        side: None,
        fix: None,
    }
}

#[test]
fn a_finding_on_changed_lines_is_kept_with_its_code() {
    let f = check(&args("src/a.rs", 1, 3), &diff(), "").unwrap();
    assert_eq!((f.start_line, f.end_line, f.priority), (1, 3, 1));
    let code: Vec<&str> = f.code.iter().map(|c| c.text.as_str()).collect();
    assert_eq!(code, ["one", "2", "three"]);
    assert_eq!(f.location(), "src/a.rs:1-3");
    assert_eq!(f.fingerprint.len(), 32);
    let again = check(&args("./src/a.rs", 1, 3), &diff(), "").unwrap();
    assert_eq!(f.fingerprint, again.fingerprint);
    let from_sub = check(&args("a.rs", 11, 11), &diff(), "src").unwrap();
    assert_eq!(from_sub.path, "src/a.rs");
}

#[test]
fn findings_outside_the_diff_are_refused_with_the_reason() {
    let d = diff();
    let e = check(&args("src/a.rs", 3, 10), &d, "").unwrap_err();
    assert!(e.contains("not all in this review's diff"), "{e}");
    assert!(e.contains("1-3, 10-12"), "{e}");
    let e = check(&args("src/other.rs", 1, 1), &d, "").unwrap_err();
    assert!(e.contains("not part of this review's scope"), "{e}");
    assert!(e.contains("src/a.rs, gone.txt, new.rs, logo.png"), "{e}");
    let e = check(&args("../etc/passwd", 1, 1), &d, "").unwrap_err();
    assert!(e.contains(".."), "{e}");
    let e = check(&args("/etc/passwd", 1, 1), &d, "").unwrap_err();
    assert!(e.contains("absolute"), "{e}");
    let e = check(&args("src/a.rs", 3, 2), &d, "").unwrap_err();
    assert!(e.contains("start_line <= end_line"), "{e}");
    let e = check(&args("src/a.rs", 0, 0), &d, "").unwrap_err();
    assert!(e.contains("name them"), "{e}");
}

#[test]
fn the_other_fields_are_checked() {
    let d = diff();
    let bad = [
        (
            FindingArgs {
                priority: 4,
                ..args("src/a.rs", 1, 1)
            },
            "priority 4",
        ),
        (
            FindingArgs {
                priority: -1,
                ..args("src/a.rs", 1, 1)
            },
            "priority -1",
        ),
        (
            FindingArgs {
                confidence: 1.5,
                ..args("src/a.rs", 1, 1)
            },
            "confidence",
        ),
        (
            FindingArgs {
                confidence: f64::NAN,
                ..args("src/a.rs", 1, 1)
            },
            "confidence",
        ),
        (
            FindingArgs {
                title: " ".into(),
                ..args("src/a.rs", 1, 1)
            },
            "title",
        ),
        (
            FindingArgs {
                title: "a\nb".into(),
                ..args("src/a.rs", 1, 1)
            },
            "title",
        ),
        (
            FindingArgs {
                body: "".into(),
                ..args("src/a.rs", 1, 1)
            },
            "body",
        ),
    ];
    for (a, expected) in bad {
        let e = check(&a, &d, "").unwrap_err();
        assert!(e.contains(expected), "{expected}: {e}");
    }
}

#[test]
fn deleted_lines_take_the_old_side_and_an_anchor() {
    let d = diff();
    let old = FindingArgs {
        side: Some(Side::Old),
        ..args("src/a.rs", 2, 2)
    };
    let f = check(&old, &d, "").unwrap();
    assert_eq!((f.side, f.anchor_line), (Side::Old, Some(2)));
    assert_eq!(f.code[0].text, "two");
    assert_eq!(f.location(), "src/a.rs:2 (deleted lines)");
    let e = check(&args("gone.txt", 1, 1), &d, "").unwrap_err();
    assert!(e.contains("set side \"old\""), "{e}");
    let gone = FindingArgs {
        side: Some(Side::Old),
        ..args("gone.txt", 1, 1)
    };
    assert_eq!(check(&gone, &d, "").unwrap().anchor_line, None);
}

#[test]
fn a_renamed_file_is_named_by_its_new_path() {
    let d = diff();
    let f = check(&args("new.rs", 3, 3), &d, "").unwrap();
    assert_eq!(f.old_path.as_deref(), Some("old.rs"));
    let e = check(&args("old.rs", 3, 3), &d, "").unwrap_err();
    assert!(e.contains("is now `new.rs`"), "{e}");
    let old_side = FindingArgs {
        side: Some(Side::Old),
        ..args("old.rs", 3, 3)
    };
    assert_eq!(check(&old_side, &d, "").unwrap().path, "new.rs");
}

#[test]
fn a_binary_file_takes_only_whole_file_findings() {
    let d = diff();
    let e = check(&args("logo.png", 1, 1), &d, "").unwrap_err();
    assert!(e.contains("binary file"), "{e}");
    assert!(e.contains("start_line 0 and end_line 0"), "{e}");
    let f = check(&args("logo.png", 0, 0), &d, "").unwrap();
    assert!(f.whole_file() && f.code.is_empty());
    assert_eq!(f.location(), "logo.png");
}

#[test]
fn a_fix_must_update_the_file_and_apply() {
    let current = "fn main() {\n    let x = 1;\n    println!(\"{x}\");\n}\n";
    let patch = "*** Begin Patch\n*** Update File: src/main.rs\n@@\n-    let x = 1;\n+    let x = 2;\n*** End Patch";
    let fix = fix(patch, "src/main.rs", current).unwrap();
    assert_eq!(
        fix.replacements,
        [Replacement {
            start_line: 2,
            end_line: 2,
            text: "    let x = 2;".into()
        }]
    );
    assert!(
        fix.diff.contains("-    let x = 1;\n+    let x = 2;"),
        "{}",
        fix.diff
    );
    let other = patch.replace("src/main.rs", "src/other.rs");
    let e = super::fix(&other, "src/main.rs", current).unwrap_err();
    assert!(
        e.contains("one `*** Update File: src/main.rs` section"),
        "{e}"
    );
    let stale = patch.replace("let x = 1", "let y = 1");
    let e = super::fix(&stale, "src/main.rs", current).unwrap_err();
    assert!(e.contains("does not apply"), "{e}");
    let e = super::fix("not a patch", "src/main.rs", current).unwrap_err();
    assert!(e.contains("apply_patch's format"), "{e}");
}

/// The replacements, applied to `old` as SARIF consumers apply them
/// (whole lines, the last one's ending kept), give `new`.
fn apply(old: &str, replacements: &[Replacement]) -> String {
    let lines: Vec<&str> = old.split_inclusive('\n').collect();
    let mut out = String::new();
    let mut next = 1;
    for r in replacements {
        for line in &lines[next - 1..r.start_line as usize - 1] {
            out.push_str(line);
        }
        out.push_str(&r.text);
        let last = lines[r.end_line as usize - 1];
        out.push_str(&last[strip_last_eol(last).len()..]);
        next = r.end_line as usize + 1;
    }
    for line in &lines[next - 1..] {
        out.push_str(line);
    }
    out
}

#[test]
fn replacements_reproduce_every_kind_of_change() {
    let old = "a\nb\nc\nd\n";
    for new in [
        "a\nB\nc\nd\n",
        "a\nc\nd\n",
        "a\nb\nc\n",
        "b\nc\nd\n",
        "a\nb\nx\ny\nc\nd\n",
        "x\na\nb\nc\nd\n",
        "a\nb\nc\nd\ne\n",
        "A\nb\nc\nD\n",
    ] {
        let r = replacements(old, new).unwrap();
        assert_eq!(apply(old, &r), new, "{r:?}");
    }
    assert!(replacements("", "a\n").is_err());
}
