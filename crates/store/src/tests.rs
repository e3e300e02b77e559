use super::*;
use cogni_protocol::{Image, ToolCall, ToolCallKind};

fn header(id: &str) -> Header {
    Header::new(id, 1_700_000_000, Path::new("/repo"), "gpt-4.1", "openai")
}

fn call(id: &str) -> HistoryItem {
    HistoryItem::tool_call(ToolCall {
        id: id.into(),
        name: "shell".into(),
        arguments: "{}".into(),
        kind: ToolCallKind::Function,
    })
}

fn output(id: &str) -> HistoryItem {
    HistoryItem::tool_output(ToolOutput {
        call_id: id.into(),
        content: "ok".into(),
        is_error: false,
        command: None,
        images: Vec::new(),
    })
}

/// No redaction.
fn none() -> Redactor {
    Arc::new(|line: &str| line.to_string())
}

fn store() -> (tempfile::TempDir, Store) {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::new(dir.path());
    (dir, store)
}

#[test]
fn a_session_round_trips_with_private_permissions_and_redaction() {
    let (_dir, store) = store();
    let initial = [HistoryItem::text(Role::Developer, "dev")];
    let file = store
        .create(
            &header("s1"),
            &initial,
            Arc::new(|line: &str| line.replace("my-provider-key-123", "[REDACTED]")),
        )
        .unwrap();
    file.appended(&[
        HistoryItem::text(Role::User, "use my-provider-key-123 here"),
        call("c1"),
        output("c1"),
    ]);
    file.record_usage(&Usage {
        input_tokens: 100,
        output_tokens: 20,
        ..Usage::default()
    });
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(file.path()).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
    }
    let text = std::fs::read_to_string(file.path()).unwrap();
    assert_eq!(text.lines().count(), 6, "{text}");
    assert!(!text.contains("my-provider-key-123"), "{text}");
    drop(file);
    let loaded = store.load("s1").unwrap();
    assert_eq!(loaded.header, header("s1"));
    assert_eq!(loaded.history.len(), 4);
    assert_eq!(loaded.history[1].as_text(), Some("use [REDACTED] here"));
    assert_eq!(loaded.usage.total(), 120);
    assert!(loaded.warnings.is_empty());
}

#[test]
fn the_redactor_sees_each_text_before_it_is_encoded() {
    let (_dir, store) = store();
    // A redactor that only recognises a secret at the start of a line: it
    // works only if it sees the real newline, not JSON's `\n`.
    let redact: Redactor = Arc::new(|text: &str| {
        text.lines()
            .map(|l| if l.starts_with("TOKEN") { "[R]" } else { l })
            .collect::<Vec<_>>()
            .join("\n")
    });
    let file = store
        .create(
            &header("s1"),
            &[HistoryItem::text(Role::User, "a\nTOKEN")],
            redact,
        )
        .unwrap();
    let mut item = call("c1");
    if let Content::ToolCall(c) = &mut item.content {
        c.arguments = "ls\nTOKEN".into();
    }
    file.appended(&[item.clone()]);
    let output = HistoryItem::tool_output(ToolOutput {
        call_id: "c1".into(),
        content: "out\nTOKEN".into(),
        is_error: false,
        command: None,
        images: Vec::new(),
    });
    file.replaced(&[item, output]);
    let text = std::fs::read_to_string(file.path()).unwrap();
    assert!(!text.contains("TOKEN"), "{text}");
    drop(file);
    let loaded = store.load("s1").unwrap();
    assert_eq!(loaded.history.len(), 2);
    match (&loaded.history[0].content, &loaded.history[1].content) {
        (Content::ToolCall(c), Content::ToolOutput(o)) => {
            assert_eq!(c.arguments, "ls\n[R]");
            assert_eq!(o.content, "out\n[R]");
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn replace_records_replay_in_order() {
    let (_dir, store) = store();
    let file = store.create(&header("s1"), &[], none()).unwrap();
    file.appended(&[HistoryItem::text(Role::User, "a")]);
    file.replaced(&[HistoryItem::text(Role::User, "summary")]);
    file.appended(&[HistoryItem::text(Role::User, "b")]);
    let texts: Vec<_> = store
        .load("s1")
        .unwrap()
        .history
        .iter()
        .map(|i| i.as_text().unwrap().to_string())
        .collect();
    assert_eq!(texts, ["summary", "b"]);
}

fn checkpoint(turn: u32, prompt: &str, after: Option<&str>) -> TurnCheckpoint {
    TurnCheckpoint {
        turn,
        prompt: prompt.into(),
        at: 1_800_000_000,
        history_len: Some(2 * turn as usize),
        before: format!("b{turn}"),
        after: after.map(str::to_string),
        files: vec!["a.txt".into()],
        workspace: "/w".into(),
        shadow: None,
    }
}

#[test]
fn checkpoints_replay_completed_rewound_and_redacted() {
    let (_dir, store) = store();
    let file = store
        .create(
            &header("s1"),
            &[],
            Arc::new(|line: &str| line.replace("sk-secret", "[REDACTED]")),
        )
        .unwrap();
    file.checkpoint(&checkpoint(1, "one", None));
    file.checkpoint(&checkpoint(1, "one", Some("a1")));
    file.checkpoint(&checkpoint(2, "two with sk-secret", Some("a2")));
    file.checkpoint(&checkpoint(3, "three", Some("a3")));
    file.rewound(3);
    // History rewritten above turn 1's cut and below turn 2's.
    let items: Vec<HistoryItem> = (0..4)
        .map(|i| HistoryItem::text(Role::User, format!("m{i}")))
        .collect();
    file.appended(&items);
    file.replaced(&items[..3]);
    let text = std::fs::read_to_string(file.path()).unwrap();
    assert!(!text.contains("sk-secret"), "{text}");
    drop(file);
    let loaded = store.load("s1").unwrap();
    assert_eq!(
        loaded.checkpoints,
        vec![
            checkpoint(1, "one", Some("a1")),
            TurnCheckpoint {
                history_len: None,
                ..checkpoint(2, "two with [REDACTED]", Some("a2"))
            }
        ]
    );
    assert!(loaded.warnings.is_empty());
}

#[test]
fn a_torn_last_line_is_skipped_and_cut_before_appending() {
    let (_dir, store) = store();
    let file = store.create(&header("s1"), &[], none()).unwrap();
    file.appended(&[HistoryItem::text(Role::User, "kept")]);
    let path = file.path().to_path_buf();
    drop(file);
    let mut f = OpenOptions::new().append(true).open(&path).unwrap();
    f.write_all(br#"{"type":"item","item":{"role":"user","con"#)
        .unwrap();
    let (loaded, file) = store.open("s1", None, none()).unwrap();
    assert_eq!(loaded.history.len(), 1);
    assert!(
        loaded.warnings[0].contains("cut off"),
        "{:?}",
        loaded.warnings
    );
    file.appended(&[HistoryItem::text(Role::User, "after")]);
    drop(file);
    let loaded = store.load("s1").unwrap();
    assert!(loaded.warnings.is_empty(), "{:?}", loaded.warnings);
    assert_eq!(loaded.history.len(), 2);
}

#[test]
fn corrupted_lines_and_unanswered_calls_are_repaired() {
    let (_dir, store) = store();
    let file = store.create(&header("s1"), &[], none()).unwrap();
    let path = file.path().to_path_buf();
    file.appended(&[
        HistoryItem::text(Role::User, "go"),
        call("a"),
        call("b"),
        output("a"),
    ]);
    drop(file);
    let mut f = OpenOptions::new().append(true).open(&path).unwrap();
    f.write_all(b"garbage line\n").unwrap();
    drop(f);
    let file = SessionFile::new(
        OpenOptions::new().append(true).open(&path).unwrap(),
        path.clone(),
        0,
        none(),
        HashSet::new(),
    );
    file.appended(&[output("zzz"), HistoryItem::text(Role::User, "next")]);
    drop(file);
    let (loaded, _file) = store.open("s1", None, none()).unwrap();
    assert!(
        loaded.warnings[0].contains("line 6"),
        "{:?}",
        loaded.warnings
    );
    let shapes: Vec<String> = loaded
        .history
        .iter()
        .map(|i| match &i.content {
            Content::Text { text, .. } => text.clone(),
            Content::ToolCall(c) => format!("call {}", c.id),
            Content::ToolOutput(o) => format!("output {} {}", o.call_id, o.content),
            Content::Reasoning(_) => "reasoning".into(),
            Content::Image(i) => format!("image {}", i.name),
            Content::WebSearch(w) => format!("web search {}", w.query),
        })
        .collect();
    assert_eq!(
        shapes,
        [
            "go",
            "call a",
            "call b",
            "output a ok",
            &format!("output b {INTERRUPTED_OUTPUT}"),
            "next"
        ]
    );
    assert!(loaded.warnings.iter().any(|w| w.contains("interrupted")));
}

#[test]
fn empty_and_garbage_files_are_clear_errors() {
    let (_dir, store) = store();
    std::fs::create_dir_all(store.dir()).unwrap();
    std::fs::write(store.dir().join("empty.jsonl"), "").unwrap();
    std::fs::write(store.dir().join("junk.jsonl"), "hello\nworld\n").unwrap();
    std::fs::write(store.dir().join("bin.jsonl"), [0xff, 0xfe, 0x00]).unwrap();
    let msg = |id| store.load(id).unwrap_err().to_string();
    assert!(msg("empty").contains("is empty"), "{}", msg("empty"));
    assert!(msg("junk").contains("not a cogni session file"));
    assert!(msg("bin").contains("not a cogni session file"));
    assert!(matches!(store.load("nope"), Err(StoreError::NotFound(_))));
    assert!(
        store.list().unwrap().is_empty(),
        "unreadable files are skipped"
    );
}

#[test]
fn a_session_in_use_is_refused_but_can_be_forked() {
    let (_dir, store) = store();
    let file = store.create(&header("s1"), &[], none()).unwrap();
    file.appended(&[HistoryItem::text(Role::User, "hi")]);
    assert!(matches!(
        store.open("s1", None, none()),
        Err(StoreError::InUse(id)) if id == "s1"
    ));
    let (loaded, fork) = store.open("s1", Some(("s2", 5)), none()).unwrap();
    assert_eq!(loaded.header.id, "s2");
    assert_eq!(loaded.header.forked_from.as_deref(), Some("s1"));
    fork.appended(&[HistoryItem::text(Role::User, "only in the fork")]);
    assert_eq!(store.load("s1").unwrap().history.len(), 1);
    assert_eq!(store.load("s2").unwrap().history.len(), 2);
    drop(file);
    assert!(store.open("s1", None, none()).is_ok(), "free once closed");
}

#[test]
fn a_failed_write_is_reported_and_stops_saving() {
    let full = OpenOptions::new().append(true).open("/dev/full").unwrap();
    let file = SessionFile::new(full, PathBuf::from("/dev/full"), 0, none(), HashSet::new());
    file.appended(&[HistoryItem::text(Role::User, "lost")]);
    let failure = file.failure().unwrap();
    assert!(failure.contains("no longer saved"), "{failure}");
    file.appended(&[HistoryItem::text(Role::User, "not tried")]);
}

#[test]
fn an_unwritable_directory_is_an_error_naming_no_persist() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("sessions"), "a file, not a directory").unwrap();
    let err = Store::new(dir.path())
        .create(&header("s1"), &[], none())
        .err()
        .unwrap()
        .to_string();
    assert!(err.contains("--no-persist"), "{err}");
}

#[test]
fn listing_resolving_and_last() {
    let (_dir, store) = store();
    let mut h = header("abc1");
    h.started_at = 10;
    store
        .create(&h, &[HistoryItem::text(Role::User, "first task")], none())
        .unwrap();
    let mut h = header("abd2");
    h.started_at = 20;
    store.create(&h, &[], none()).unwrap();
    let list = store.list().unwrap();
    assert_eq!(list.len(), 2);
    assert_eq!(list[0].id, "abd2", "newest first");
    assert_eq!(list[1].first_prompt, "first task");
    assert_eq!(store.resolve("abc").unwrap(), "abc1");
    assert!(matches!(
        store.resolve("ab"),
        Err(StoreError::Ambiguous(..))
    ));
    assert!(matches!(store.resolve("x"), Err(StoreError::NotFound(_))));
    assert!(["abc1", "abd2"].contains(&store.last().unwrap().as_str()));
}

#[test]
fn times_format_as_utc() {
    assert_eq!(format_time(0), "1970-01-01 00:00");
    assert_eq!(format_time(1_700_000_000), "2023-11-14 22:13");
    assert_eq!(format_time(951_782_400), "2000-02-29 00:00");
}

fn image(hash: &str, data: &str) -> Image {
    Image {
        media_type: "image/png".into(),
        hash: hash.into(),
        width: 2,
        height: 3,
        name: format!("{hash}.png"),
        data: Arc::from(data),
    }
}

#[test]
fn an_images_bytes_are_kept_once_unredacted_and_filled_back_in() {
    let (_dir, store) = store();
    let file = store
        .create(
            &header("s1"),
            &[],
            Arc::new(|line: &str| line.replace("SECRET", "[REDACTED]")),
        )
        .unwrap();
    let attached = HistoryItem {
        role: Role::User,
        content: Content::Image(image("aa", "SECRETbytes")),
    };
    let mut shown = output("c1");
    if let Content::ToolOutput(o) = &mut shown.content {
        o.images.push(image("aa", "SECRETbytes"));
        o.images.push(image("bb", "other"));
    }
    file.appended(&[attached.clone(), call("c1"), shown]);
    file.replaced(std::slice::from_ref(&attached));
    let text = std::fs::read_to_string(file.path()).unwrap();
    assert_eq!(
        text.matches("\"type\":\"image\",\"hash\"").count(),
        2,
        "{text}"
    );
    assert_eq!(
        text.matches("SECRETbytes").count(),
        1,
        "bytes as they are, once: {text}"
    );
    drop(file);

    // Resumed: the file already holds both images.
    let (loaded, file) = store.open("s1", None, none()).unwrap();
    assert_eq!(loaded.history, std::slice::from_ref(&attached));
    let Content::Image(back) = &loaded.history[0].content else {
        panic!("{:?}", loaded.history[0]);
    };
    assert_eq!(&*back.data, "SECRETbytes");
    file.appended(&[attached]);
    drop(file);
    let text = std::fs::read_to_string(store.dir().join("s1.jsonl")).unwrap();
    assert_eq!(text.matches("SECRETbytes").count(), 1, "{text}");
}

#[test]
fn an_image_whose_bytes_are_gone_becomes_a_note() {
    let (_dir, store) = store();
    let file = store.create(&header("s1"), &[], none()).unwrap();
    file.appended(&[HistoryItem {
        role: Role::User,
        content: Content::Image(image("aa", "bytes")),
    }]);
    drop(file);
    let path = store.dir().join("s1.jsonl");
    let text = std::fs::read_to_string(&path).unwrap();
    let kept: Vec<&str> = text
        .lines()
        .filter(|l| !l.contains("\"data\":\"bytes\""))
        .collect();
    std::fs::write(&path, kept.join("\n") + "\n").unwrap();
    let loaded = store.load("s1").unwrap();
    assert_eq!(
        loaded.history[0].as_text(),
        Some("[image aa.png (image/png, 2×3, 0 KB) is no longer available]")
    );
    assert!(!loaded.warnings.is_empty());
}
