//! A model family with `tool_call_mode = "text"`: the session's requests go
//! through the text tool-call decorator; history keeps native calls and
//! outputs; a model switch changes how calls are written.

use super::*;
use cogni_provider::model_family::FamilyOverride;
use cogni_provider::ToolCallMode;

fn text_mode(mut c: SessionConfig) -> SessionConfig {
    c.model_families.insert(
        "scripted".into(),
        FamilyOverride {
            tool_call_mode: Some(ToolCallMode::Text),
            // The tool section lists the tools in full instead.
            tools_in_prompt: Some(true),
            ..Default::default()
        },
    );
    c
}

#[tokio::test]
async fn blocks_in_the_text_run_as_calls_and_history_keeps_them_native() {
    let script = r#"
[[turns]]
text = "Echoing.\n```json\n{\"tool\": \"echo\", \"arguments\": {\"text\": \"hi\"}}\n```\n"
[[turns]]
text = "done"
[[turns]]
text = "native again"
"#;
    let c = text_mode(config());
    let mut h = harness_with(script, c.clone());
    let r = h.run("go").await.unwrap();
    assert_eq!(r.final_text, "done");
    assert_eq!(*h.log.lock().unwrap(), ["start hi", "end hi"]);

    let seen = h.fake.seen();
    assert!(seen[0].tools.is_empty(), "no API tools");
    assert!(
        seen[0].instructions.contains("\n## echo\necho\n"),
        "{}",
        seen[0].instructions
    );
    assert!(!seen[0].instructions.contains("# Available tools"));
    assert_eq!(seen[0].instructions, seen[1].instructions);
    let texts: Vec<&str> = seen[1].input.iter().filter_map(|i| i.as_text()).collect();
    assert!(texts.contains(&"Output of `echo`:\necho: hi"), "{texts:?}");
    assert!(
        seen[1].input.iter().all(|i| i.as_text().is_some()),
        "only text goes out: {:#?}",
        seen[1].input
    );
    let calls = h
        .session
        .history()
        .iter()
        .filter(|i| matches!(&i.content, Content::ToolCall(c) if c.name == "echo"))
        .count();
    assert_eq!(calls, 1, "history keeps the call itself");

    // Another model, native: its requests carry history as it is.
    let mut native = c;
    native.model_families.clear();
    h.session.reconfigure(native).unwrap();
    h.run("again").await.unwrap();
    let seen = h.fake.seen();
    assert!(!seen[2].instructions.contains("# Tool calls"));
    assert!(seen[2]
        .input
        .iter()
        .any(|i| matches!(&i.content, Content::ToolCall(c) if c.name == "echo")));
}
