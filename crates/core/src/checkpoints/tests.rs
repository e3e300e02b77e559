use super::*;
use crate::session::{start_session_with_provider, SessionConfig};
use cogni_protocol::{ApprovalPolicy, EditTool};
use cogni_provider::scripted::{Script, ScriptedProvider};
use cogni_provider::{ProviderInfo, WireApi};
use std::path::Path;
use std::process::Command;
use std::sync::{Arc, Mutex};

/// A committed repository at `dir` with `b.txt`.
fn repository(dir: &Path) {
    std::fs::write(dir.join("b.txt"), "bee\n").unwrap();
    for args in [
        &["init", "-q"][..],
        &["add", "."],
        &[
            "-c",
            "user.name=t",
            "-c",
            "user.email=t@t",
            "commit",
            "-qm",
            "b",
        ],
    ] {
        let status = Command::new("git")
            .args(args)
            .current_dir(dir)
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .status()
            .unwrap();
        assert!(status.success(), "git {args:?}");
    }
}

fn write_call(path: &str, content: &str) -> String {
    format!(
        "[[turns]]\n[[turns.tool_calls]]\nname = \"write_file\"\narguments = {{ path = \"{path}\", content = \"{content}\" }}\n[[turns]]\ntext = \"wrote {path}\"\n"
    )
}

/// A session in `dir` whose turns write files through `write_file`, with
/// checkpoints on (shadow repositories under `dir/../shadows`) or off.
fn session(dir: &Path, script: &str, checkpoints: bool) -> Session {
    let mut info = ProviderInfo::new("fake", "", WireApi::Scripted);
    info.default_model = Some("scripted".into());
    let mut c = SessionConfig::new(info, dir.to_path_buf());
    c.tool_config.enabled = vec!["write_file".into()];
    c.tool_config.edit_tool = Some(EditTool::None);
    c.approval_policy = ApprovalPolicy::Never;
    c.run.checkpoints = checkpoints.then(|| dir.parent().unwrap().join("shadows"));
    let provider = Arc::new(ScriptedProvider::new(Script::parse(script).unwrap()));
    start_session_with_provider(c, provider).unwrap()
}

/// Collects the checkpoint events and warnings.
#[derive(Default)]
struct Events(Mutex<Vec<String>>);

impl EventSink for Events {
    fn emit(&self, event: AgentEvent) {
        match event {
            AgentEvent::Checkpoint { turn, files, .. } => self
                .0
                .lock()
                .unwrap()
                .push(format!("checkpoint {turn}: {}", files.join(","))),
            AgentEvent::Warning { message } => self.0.lock().unwrap().push(message),
            _ => {}
        }
    }
}

fn read(dir: &Path, path: &str) -> Option<String> {
    std::fs::read_to_string(dir.join(path)).ok()
}

const ALL: Rewind = Rewind {
    files: true,
    conversation: true,
    overwrite: false,
};

#[tokio::test]
async fn turns_are_taken_back_with_their_files_and_hand_edits_are_conflicts() {
    let dir = tempfile::tempdir().unwrap();
    let repo = dir.path().join("repo");
    std::fs::create_dir(&repo).unwrap();
    repository(&repo);
    let script = format!(
        "{}{}",
        write_call("a.txt", "made by turn 1"),
        write_call("b.txt", "changed by turn 2")
    );
    let mut s = session(&repo, &script, true);
    let events = Events::default();
    s.run_turn("make a.txt", &events).await.unwrap();
    let after_one = s.history().len();
    s.run_turn("change b.txt", &events).await.unwrap();
    assert_eq!(
        *events.0.lock().unwrap(),
        ["checkpoint 1: a.txt", "checkpoint 2: b.txt"]
    );
    let list = s.turn_checkpoints();
    assert_eq!(list.len(), 2);
    assert_eq!(list[1].prompt, "change b.txt");
    assert_eq!(list[1].history_len, Some(after_one));

    // An unrelated edit by hand: no conflict; `/undo` takes turn 2 back.
    std::fs::write(repo.join("notes.txt"), "mine").unwrap();
    let plan = s.plan_rewind(2, &events).await.unwrap();
    assert!(plan.conflicts.is_empty(), "{plan:?}");
    assert!(plan.conversation);
    let report = s.rewind(&plan, ALL).await.unwrap();
    assert_eq!(report.restored, ["b.txt"]);
    assert_eq!(read(&repo, "b.txt").as_deref(), Some("bee\n"));
    assert_eq!(read(&repo, "notes.txt").as_deref(), Some("mine"));
    assert_eq!(s.history().len(), after_one);
    assert_eq!(s.turn_checkpoints().len(), 1);

    // a.txt changed by hand after turn 1: a conflict, kept unless
    // overwriting.
    std::fs::write(repo.join("a.txt"), "edited by hand").unwrap();
    let plan = s.plan_rewind(1, &events).await.unwrap();
    assert_eq!(plan.conflicts, ["a.txt"]);
    let files_only = Rewind {
        conversation: false,
        ..ALL
    };
    let report = s.rewind(&plan, files_only).await.unwrap();
    assert_eq!(report.kept, ["a.txt"]);
    assert_eq!(read(&repo, "a.txt").as_deref(), Some("edited by hand"));
    assert_eq!(s.turn_checkpoints().len(), 1, "files only: the turn stays");
    let plan = s.plan_rewind(1, &events).await.unwrap();
    let overwrite = Rewind {
        overwrite: true,
        ..ALL
    };
    s.rewind(&plan, overwrite).await.unwrap();
    assert!(!repo.join("a.txt").exists(), "made by turn 1, so removed");
    assert_eq!(s.history().len(), s.initial_len());
    assert!(s.turn_checkpoints().is_empty());
    assert!(matches!(
        s.plan_rewind(1, &events).await,
        Err(CheckpointError::NoTurn(_))
    ));
}

#[tokio::test]
async fn a_rewritten_conversation_keeps_only_the_files_rewind() {
    let dir = tempfile::tempdir().unwrap();
    let work = dir.path().join("plain");
    std::fs::create_dir(&work).unwrap();
    let script = format!(
        "{}{}",
        write_call("a.txt", "one"),
        write_call("b.txt", "two")
    );
    let mut s = session(&work, &script, true);
    let events = Events::default();
    s.run_turn("make a.txt", &events).await.unwrap();
    s.run_turn("make b.txt", &events).await.unwrap();
    assert!(s.turn_checkpoints()[0].shadow.is_some(), "not a repository");
    let diff = s.checkpoint_diff(&events).await.unwrap();
    assert!(diff.contains("+one") && diff.contains("+two"), "{diff}");
    // Turn 2's cut is gone; turn 1's (the initial context) stays.
    s.reset();
    let plan = s.plan_rewind(2, &events).await.unwrap();
    assert!(!plan.conversation);
    let err = s.rewind(&plan, ALL).await.unwrap_err();
    assert!(err.to_string().contains("rewritten"), "{err}");
    let files_only = Rewind {
        conversation: false,
        ..ALL
    };
    s.rewind(&plan, files_only).await.unwrap();
    assert!(!work.join("b.txt").exists());
    assert_eq!(read(&work, "a.txt").as_deref(), Some("one"));
    assert!(s.plan_rewind(1, &events).await.unwrap().conversation);
}

#[tokio::test]
async fn without_checkpoints_nothing_is_snapshot_and_undo_says_why() {
    let dir = tempfile::tempdir().unwrap();
    let work = dir.path().join("plain");
    std::fs::create_dir(&work).unwrap();
    let mut s = session(&work, &write_call("a.txt", "one"), false);
    let events = Events::default();
    s.run_turn("make a.txt", &events).await.unwrap();
    assert!(s.turn_checkpoints().is_empty());
    assert!(!dir.path().join("shadows").exists());
    let err = s.plan_rewind(1, &events).await.unwrap_err();
    assert!(err.to_string().contains("checkpoints are off"), "{err}");
}
