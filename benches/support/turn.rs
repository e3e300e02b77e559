//! One scripted turn whose model calls `read_file` once, in a session
//! with the given hooks and effects: what a hook and an effect cost is the
//! difference between such turns. Shared by `benches/hooks.rs` and
//! `examples/bench_hook.rs`.

use cogni::agent::{start_session_with_provider, Session, SessionConfig};
use cogni::protocol::EditTool;
use cogni::provider::scripted::{Script, ScriptedProvider};
use cogni::provider::{ProviderInfo, WireApi};
use cogni::spec::effects::EffectSpec;
use cogni::spec::hooks::HookSpec;
use std::path::Path;
use std::sync::Arc;

const SCRIPT: &str = r#"
[[turns]]
usage = { input_tokens = 1000, output_tokens = 10 }
[[turns.tool_calls]]
name = "read_file"
arguments = { path = "notes.txt" }
[[turns]]
text = "done"
usage = { input_tokens = 1100, output_tokens = 5 }
"#;

/// Write the file the turn reads into `dir`.
pub fn workspace(dir: &Path) {
    std::fs::write(dir.join("notes.txt"), "a few notes\n").expect("notes");
}

/// A fresh session in `dir` whose next turn reads `notes.txt` once.
pub fn session(dir: &Path, hooks: &[HookSpec], effects: Vec<EffectSpec>) -> Session {
    let mut info = ProviderInfo::new("scripted", "", WireApi::Scripted);
    info.default_model = Some("scripted".into());
    let mut config = SessionConfig::new(info, dir.to_path_buf());
    config.tool_config.enabled = vec!["read_file".into()];
    config.tool_config.edit_tool = Some(EditTool::None);
    config.hooks = hooks.to_vec();
    config.effects = effects;
    let script = Script::parse(SCRIPT).expect("script");
    start_session_with_provider(config, Arc::new(ScriptedProvider::new(script))).expect("session")
}

/// Run that turn; it must have made its one call.
pub async fn read_notes(session: &mut Session) {
    let sink = |_: cogni::protocol::AgentEvent| {};
    let result = session
        .run_turn("read the notes", &sink)
        .await
        .expect("turn");
    assert_eq!(result.tool_calls.len(), 1);
}
