use super::*;

const RAW: &[u8] = b":100644 100644 1111111 2222222 M\0src/a.rs\0\
:100644 000000 3333333 0000000 D\0gone.txt\0\
:100644 100644 4444444 5555555 R090\0old name.rs\0new name.rs\0\
:000000 100644 0000000 6666666 A\0logo.png\0";

const PATCH: &str = "diff --git a/src/a.rs b/src/a.rs
index 1111111..2222222 100644
--- a/src/a.rs
+++ b/src/a.rs
@@ -1,4 +1,4 @@ fn main() {
 one
-two
+2
 three
--- not a header: a removed line
@@ -10,2 +10,3 @@
 ten
+ten and a half
 eleven
\\ No newline at end of file
diff --git a/gone.txt b/gone.txt
deleted file mode 100644
index 3333333..0000000
--- a/gone.txt
+++ /dev/null
@@ -1,2 +0,0 @@
-bye
-diff --git looks like a header
diff --git a/old name.rs b/new name.rs
similarity index 90%
rename from old name.rs
rename to new name.rs
index 4444444..5555555 100644
--- a/old name.rs
+++ b/new name.rs
@@ -3 +3 @@
-x
+y
diff --git a/logo.png b/logo.png
new file mode 100644
index 0000000..6666666
Binary files /dev/null and b/logo.png differ
";

fn parsed() -> Vec<FileDiff> {
    parse(RAW, PATCH.as_bytes()).unwrap()
}

#[test]
fn files_come_with_status_paths_and_content() {
    let files = parsed();
    let shown: Vec<(&str, Option<&str>, FileStatus, bool)> = files
        .iter()
        .map(|f| {
            (
                f.path.as_str(),
                f.old_path.as_deref(),
                f.status,
                f.content.has_lines(),
            )
        })
        .collect();
    assert_eq!(
        shown,
        [
            ("src/a.rs", None, FileStatus::Modified, true),
            ("gone.txt", None, FileStatus::Deleted, true),
            (
                "new name.rs",
                Some("old name.rs"),
                FileStatus::Renamed,
                true
            ),
            ("logo.png", None, FileStatus::Added, false),
        ]
    );
    assert_eq!(files[3].content, Content::Binary);
    assert!(files[3].hunks.is_empty());
}

#[test]
fn hunks_are_read_by_their_counts_with_both_line_numbers() {
    let files = parsed();
    let a = &files[0];
    assert_eq!(a.hunks.len(), 2);
    // "--- not a header" is the 4th old line of the first hunk.
    let first: Vec<(LineKind, Option<u32>, Option<u32>, &str)> = a.hunks[0]
        .lines
        .iter()
        .map(|l| (l.kind, l.old, l.new, l.text.as_str()))
        .collect();
    assert_eq!(
        first,
        [
            (LineKind::Context, Some(1), Some(1), "one"),
            (LineKind::Removed, Some(2), None, "two"),
            (LineKind::Added, None, Some(2), "2"),
            (LineKind::Context, Some(3), Some(3), "three"),
            (
                LineKind::Removed,
                Some(4),
                None,
                "-- not a header: a removed line"
            ),
        ]
    );
    assert_eq!(a.hunks[1].lines.len(), 3);
    assert_eq!(a.hunks[0].header, "-1,4 +1,4 @@ fn main() {");
    let gone = &files[1];
    assert_eq!(
        gone.hunks[0].lines[1].text,
        "diff --git looks like a header"
    );
}

#[test]
fn lines_must_all_be_in_the_diff_on_their_side() {
    let a = &parsed()[0];
    assert_eq!(a.lines(Side::New, 1, 3).map(|l| l.len()), Some(3));
    assert!(a.lines(Side::New, 3, 10).is_none(), "4..9 are not shown");
    assert_eq!(a.lines(Side::New, 10, 12).map(|l| l.len()), Some(3));
    assert!(a.lines(Side::New, 12, 13).is_none());
    assert_eq!(a.lines(Side::Old, 2, 4).map(|l| l.len()), Some(3));
    assert_eq!(a.ranges(Side::New), [(1, 3), (10, 12)]);
    assert_eq!(a.ranges(Side::Old), [(1, 4), (10, 11)]);
}

#[test]
fn deleted_lines_are_anchored_where_they_stood() {
    let files = parsed();
    // Old line 2 ("two") stood before new line 2; old line 4 at the
    // hunk's end has no new line after it: the one before.
    assert_eq!(files[0].anchor(2, 2), Some(2));
    assert_eq!(files[0].anchor(4, 4), Some(3));
    assert_eq!(files[1].anchor(1, 2), None, "a deleted file has none");
}

#[test]
fn the_rendered_diff_numbers_every_line() {
    let diff = ScopeDiff { files: parsed() };
    let text = diff.render(Limits {
        max_bytes: 1 << 20,
        max_lines: 10_000,
    });
    assert!(text.contains("=== src/a.rs (modified) ===\n@@ -1,4 +1,4 @@ fn main() {\n"));
    assert!(
        text.contains("     2        -two\n            2 +2\n"),
        "{text}"
    );
    assert!(text.contains("=== new name.rs (renamed from old name.rs) ==="));
    assert!(text.contains("=== logo.png (added) ===\n(binary file: no lines)\n"));
    assert_eq!(diff.counts(), (3, 5));
}

#[test]
fn a_mismatch_between_raw_and_patch_is_an_error() {
    let e = parse(RAW, b"diff --git a/x b/x\n").unwrap_err();
    assert!(e.contains("4 changed files but its patch has 1"), "{e}");
}

#[test]
fn new_and_whole_files_from_their_bytes() {
    let added = new_file("a.txt".into(), Ok(b"one\r\ntwo".to_vec()));
    assert_eq!(added.status, FileStatus::Added);
    let lines: Vec<(Option<u32>, Option<u32>, &str)> = added.hunks[0]
        .lines
        .iter()
        .map(|l| (l.old, l.new, l.text.as_str()))
        .collect();
    assert_eq!(lines, [(None, Some(1), "one"), (None, Some(2), "two")]);
    let binary = new_file("b.bin".into(), Ok(b"PNG\0\x01".to_vec()));
    assert_eq!(binary.content, Content::Binary);
    let whole = whole_file("c.rs".into(), Ok(b"x\ny\n".to_vec()));
    assert_eq!(whole.lines(Side::New, 1, 2).map(|l| l.len()), Some(2));
    assert!(whole.lines(Side::New, 2, 3).is_none());
    let empty = new_file("e".into(), Ok(Vec::new()));
    assert!(empty.content.has_lines() && empty.hunks.is_empty());
    let skipped = new_file("f".into(), Err(Content::Skipped("a FIFO".into())));
    assert!(!skipped.content.has_lines());
}
