use super::*;

fn call(name: &str, arguments: &str) -> Piece {
    Piece::Call {
        name: name.into(),
        arguments: arguments.into(),
        kind: ToolCallKind::Function,
    }
}

fn text(t: &str) -> Piece {
    Piece::Text(t.into())
}

/// Adjacent text pieces as one.
fn merged(pieces: Vec<Piece>) -> Vec<Piece> {
    let mut out: Vec<Piece> = Vec::new();
    for piece in pieces {
        match (out.last_mut(), piece) {
            (Some(Piece::Text(last)), Piece::Text(t)) => last.push_str(&t),
            (_, piece) => out.push(piece),
        }
    }
    out.retain(|p| !matches!(p, Piece::Text(t) if t.is_empty()));
    out
}

/// The pieces of a reply that arrives as `deltas`, and what `finish` said.
fn scan_with(deltas: &[&str], cut_off: bool) -> (Vec<Piece>, Option<String>) {
    let mut scanner = Scanner::new(vec!["apply_patch".into()]);
    let mut pieces = Vec::new();
    for delta in deltas {
        scanner.push(delta);
        pieces.extend(scanner.take());
    }
    let incomplete = scanner.finish(cut_off);
    pieces.extend(scanner.take());
    (merged(pieces), incomplete)
}

fn scan(reply: &str) -> Vec<Piece> {
    let whole = scan_with(&[reply], false).0;
    // The same whatever the pieces it arrives in: split in two at every
    // char boundary, and one char at a time.
    for (at, _) in reply.char_indices().skip(1) {
        let split = scan_with(&[&reply[..at], &reply[at..]], false).0;
        assert_eq!(split, whole, "split at byte {at} of {reply:?}");
    }
    let chars: Vec<String> = reply.chars().map(String::from).collect();
    let chars: Vec<&str> = chars.iter().map(String::as_str).collect();
    assert_eq!(scan_with(&chars, false).0, whole, "char by char: {reply:?}");
    whole
}

fn problem(piece: &Piece) -> &str {
    match piece {
        Piece::Invalid { problem, .. } => problem,
        other => panic!("not invalid: {other:?}"),
    }
}

#[test]
fn a_fenced_block_is_a_call_and_the_text_around_it_streams() {
    let reply = "Let me look.\n```json\n{\"tool\": \"read_file\", \"arguments\": {\"path\": \"a.rs\"}}\n```\nThen I fix it.";
    assert_eq!(
        scan(reply),
        vec![
            text("Let me look.\n"),
            call("read_file", r#"{"path":"a.rs"}"#),
            text("Then I fix it."),
        ]
    );
    // Untagged, tagged otherwise, indented, pretty-printed, `name` and
    // `parameters`, Hermes-style tags.
    for reply in [
        "```\n{\"tool\": \"read_file\", \"arguments\": {\"path\": \"a.rs\"}}\n```",
        "```tool_call\n{\"name\": \"read_file\", \"parameters\": {\"path\": \"a.rs\"}}\n```\n",
        "  ```JSON\n  {\n    \"tool\": \"read_file\",\n    \"arguments\": {\"path\": \"a.rs\"}\n  }\n  ```\n",
        "<tool_call>\n{\"name\": \"read_file\", \"arguments\": {\"path\": \"a.rs\"}}\n</tool_call>\n",
        "```json\n{\"tool\": \"read_file\", \"arguments\": \"{\\\"path\\\": \\\"a.rs\\\"}\"}\n```",
    ] {
        assert_eq!(
            scan(reply),
            vec![call("read_file", r#"{"path":"a.rs"}"#)],
            "{reply}"
        );
    }
}

#[test]
fn a_bare_object_on_its_own_line_is_a_call() {
    assert_eq!(
        scan("I'll list them.\n{\"tool\": \"shell\", \"arguments\": {\"command\": \"ls\"}}\nDone."),
        vec![
            text("I'll list them.\n"),
            call("shell", r#"{"command":"ls"}"#),
            text("Done."),
        ]
    );
    assert_eq!(
        scan("{\"name\": \"list_dir\"}\n{\"name\": \"list_dir\", \"arguments\": {}}"),
        vec![text("{\"name\": \"list_dir\"}\n"), call("list_dir", "{}"),],
        "a name alone is not a call (package.json has one); with arguments it is"
    );
    assert_eq!(
        scan("{\"tool\": \"list_dir\"}"),
        vec![call("list_dir", "{}")],
        "no arguments: none"
    );
}

#[test]
fn several_blocks_in_one_reply_are_several_calls_in_order() {
    let reply = "First:\n```json\n{\"tool\": \"a\", \"arguments\": {}}\n```\nthen\n```json\n{\"tool\": \"b\", \"arguments\": {\"x\": 1}}\n```\n{\"tool\": \"c\"}\n";
    assert_eq!(
        scan(reply),
        vec![
            text("First:\n"),
            call("a", "{}"),
            text("then\n"),
            call("b", r#"{"x":1}"#),
            call("c", "{}"),
        ]
    );
    // Several in one block: an array, or one object after another.
    for reply in [
        "```json\n[{\"tool\": \"a\"}, {\"tool\": \"b\"}]\n```",
        "```json\n{\"tool\": \"a\"}\n{\"tool\": \"b\"}\n```",
    ] {
        assert_eq!(
            scan(reply),
            vec![call("a", "{}"), call("b", "{}")],
            "{reply}"
        );
    }
}

#[test]
fn prose_with_braces_and_other_code_stream_as_text() {
    for reply in [
        "Use {} in format strings; {\"tool\": \"x\"} mid-line is prose.",
        "{braces} at the start of a line\n{ 1 }\n{}\n",
        "{\"version\": 1, \"tool\": \"x\"}\n",
        "```json\n{\"name\": \"pkg\", \"version\": \"1.0\"}\n```\nThat is package.json.",
        "```json\n[1, 2]\n```\n",
        "```rust\nfn main() {\n{\"tool\": \"shell\"}\n}\n```\n{\"name\": \"after\", \"x\": 1}\n",
        "```\nplain code\n```\n",
        "`inline` and ``double`` ticks\n``not a fence``\n",
        "<tool_call> is a tag name\n",
        "```python\nprint(\"```\")\n````\n```\n",
    ] {
        assert_eq!(scan(reply), vec![text(reply)], "{reply}");
    }
}

#[test]
fn text_is_not_held_longer_than_it_might_be_a_call() {
    let mut scanner = Scanner::new(Vec::new());
    scanner.push("Reading the file now");
    assert_eq!(scanner.take(), vec![text("Reading the file now")]);
    scanner.push(".\n```json\n{\"tool\": \"read_");
    assert_eq!(scanner.take(), vec![text(".\n")], "the block is held");
    scanner.push("file\"}\n```\n");
    assert_eq!(scanner.take(), vec![call("read_file", "{}")]);
    // A code block streams line by line, a prose line at once.
    scanner.push("```rust\nfn main() {\n    let x = 1;");
    assert_eq!(
        scanner.take(),
        vec![text("```rust\nfn main() {\n    let x = 1;")]
    );
    scanner.push("\n}\n```\n{\"a\": ");
    assert_eq!(scanner.take(), vec![text("\n}\n```\n{\"a\": ")]);
}

#[test]
fn a_malformed_block_says_what_is_wrong() {
    let pieces = scan("Here:\n```json\n{\"tool\": \"shell\" \"arguments\": {}}\n```\nok");
    assert_eq!(pieces.len(), 3, "{pieces:?}");
    assert_eq!(pieces[0], text("Here:\n"));
    assert_eq!(
        problem(&pieces[1]),
        "it is not valid JSON: expected `,` or `}` at line 1 column 18"
    );
    let Piece::Invalid { block, .. } = &pieces[1] else {
        unreachable!()
    };
    assert_eq!(
        block, "```json\n{\"tool\": \"shell\" \"arguments\": {}}\n```\n",
        "the block as written"
    );
    assert_eq!(pieces[2], text("ok"));

    let one = |reply: &str| {
        let pieces = scan(reply);
        assert_eq!(pieces.len(), 1, "{pieces:?}");
        problem(&pieces[0]).to_string()
    };
    assert!(one("```json\n{\"arguments\": {\"path\": \"a\"}}\n```").contains("names no tool"));
    assert!(one("{\"tool\": 7, \"arguments\": {}}")
        .contains("name must be a non-empty string, not a number"));
    assert_eq!(
        one("```json\n{\"tool\": \"shell\", \"arguments\": [\"ls\"]}\n```"),
        "the arguments of `shell` must be a JSON object, not an array"
    );
    assert_eq!(
        one("{\"tool\": \"shell\", \"arguments\": \"ls\"}"),
        "the arguments of `shell` must be a JSON object, not a string"
    );
    assert!(
        one("{\"tool\": \"shell\", \"arguments\": {\"command\": \"ls\",}}")
            .contains("not valid JSON")
    );
    // One good call and one bad object in a block: the good one runs.
    let pieces = scan("```json\n[{\"tool\": \"a\"}, 3]\n```");
    assert_eq!(pieces[0], call("a", "{}"));
    assert_eq!(
        problem(&pieces[1]),
        "a call must be a JSON object, not a number"
    );
}

#[test]
fn an_unterminated_block_at_the_end_is_read_as_it_is() {
    // The closing fence forgotten (or eaten by a stop sequence): still a call.
    assert_eq!(
        scan("```json\n{\"tool\": \"shell\", \"arguments\": {\"command\": \"ls\"}}\n"),
        vec![call("shell", r#"{"command":"ls"}"#)]
    );
    assert_eq!(
        scan("ok\n```json\n{\"tool\": \"a\"}\n```"),
        vec![text("ok\n"), call("a", "{}")]
    );
    // Cut short: malformed, unless the reply hit its token limit, when it
    // is an incomplete call that never runs.
    for reply in [
        "```json\n{\"tool\": \"shell\", \"arguments\": {\"comm",
        "{\"tool\": \"shell\", \"arguments\": {\"comm",
        "<tool_call>\n{\"tool\": \"shell\", \"arguments\": {\"comm",
    ] {
        let pieces = scan(reply);
        assert_eq!(pieces.len(), 1, "{reply}: {pieces:?}");
        assert!(
            problem(&pieces[0]).starts_with("the JSON ends before it is complete"),
            "{pieces:?}"
        );
        let (pieces, incomplete) = scan_with(&[reply], true);
        assert_eq!(pieces, vec![], "{reply}");
        assert_eq!(incomplete.as_deref(), Some("shell"), "{reply}");
    }
    // What never looked like a call is text.
    for reply in ["```json\n{\"a\": ", "{\"x", "``", "<tool_", "```"] {
        assert_eq!(scan(reply), vec![text(reply)], "{reply}");
    }
}

#[test]
fn freeform_tools_take_their_input_as_text() {
    let freeform = |arguments: &str| Piece::Call {
        name: "apply_patch".into(),
        arguments: arguments.into(),
        kind: ToolCallKind::Freeform,
    };
    assert_eq!(
        scan("```json\n{\"tool\": \"apply_patch\", \"arguments\": {\"input\": \"*** Begin Patch\\n\"}}\n```"),
        vec![freeform("*** Begin Patch\n")]
    );
    assert_eq!(
        scan("{\"tool\": \"apply_patch\", \"arguments\": \"*** Begin Patch\\n\"}"),
        vec![freeform("*** Begin Patch\n")]
    );
}
