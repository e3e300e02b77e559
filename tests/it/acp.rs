//! `cogni acp` as an editor drives it: the real binary as a subprocess,
//! spoken to over its stdin and stdout by the `agent-client-protocol`
//! crate's client side, with the scripted provider (no network, no key).
//! Every session update kind, permissions allowed, rejected and
//! cancelled, the model's questions as permission requests, a cancel
//! mid-turn, modes, slash commands, the client's
//! files, and saved sessions listed and loaded; against the loopback mock
//! (OpenAI), `/compact` and `/context reset|summarize` by what the model
//! receives next.

use crate::cli::Env;
use crate::common::mock::{chat, MockServer};
use crate::common::pty::processes_with;
use agent_client_protocol::schema::ProtocolVersion;
use agent_client_protocol::v1::schema as acp;
use agent_client_protocol::{ByteStreams, Client, Error};
use cogni::agent::compact::SUMMARY_REQUEST;
use serde_json::{json, Value};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio_util::compat::{TokioAsyncReadCompatExt, TokioAsyncWriteCompatExt};

/// The most any one wait of these tests lasts before it fails.
const LIMIT: Duration = Duration::from_secs(60);

pub(crate) type Cx = agent_client_protocol::v1::ConnectionTo<agent_client_protocol::Agent>;

/// How the client answers permission requests.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Answer {
    Allow,
    Reject,
    /// Cancel the prompt (`session/cancel`), then answer `cancelled`.
    Cancel,
    /// Select the option with this id.
    Select(&'static str),
}

/// What the client saw and holds: every update, the permission requests,
/// and the editor's buffers (read before the disk; writes go only there).
#[derive(Default)]
pub(crate) struct Editor {
    updates: Mutex<Vec<acp::SessionUpdate>>,
    permissions: Mutex<Vec<acp::RequestPermissionRequest>>,
    answer: Mutex<Option<Answer>>,
    buffers: Mutex<HashMap<PathBuf, String>>,
    seen: tokio::sync::Notify,
}

impl Editor {
    fn updates(&self) -> Vec<acp::SessionUpdate> {
        self.updates.lock().unwrap().clone()
    }

    /// Wait (within [`LIMIT`]) until an update satisfies `found`.
    async fn wait_for(&self, what: &str, found: impl Fn(&acp::SessionUpdate) -> bool) {
        let waiting = async {
            loop {
                let notified = self.seen.notified();
                if self.updates().iter().any(&found) {
                    return;
                }
                notified.await;
            }
        };
        if tokio::time::timeout(LIMIT, waiting).await.is_err() {
            panic!("no {what} within {LIMIT:?}: {:#?}", self.updates());
        }
    }

    /// The agent's message text, all chunks together.
    fn text(&self) -> String {
        chunks(&self.updates(), |u| match u {
            acp::SessionUpdate::AgentMessageChunk(c) => Some(c),
            _ => None,
        })
    }

    fn clear(&self) {
        self.updates.lock().unwrap().clear();
    }
}

fn chunks(
    updates: &[acp::SessionUpdate],
    pick: impl Fn(&acp::SessionUpdate) -> Option<&acp::ContentChunk>,
) -> String {
    updates
        .iter()
        .filter_map(pick)
        .filter_map(|c| match &c.content {
            acp::ContentBlock::Text(t) => Some(t.text.as_str()),
            _ => None,
        })
        .collect()
}

/// `cogni acp ARGS` in `env`'s workspace, driven by `scenario` through
/// the client side of the protocol; then stdin closes, and the process
/// must exit 0.
fn drive<F>(env: &Env, args: &[&str], editor: Arc<Editor>, fs: bool, scenario: F)
where
    F: AsyncFnOnce(Cx, Arc<Editor>) -> Result<(), Error>,
{
    drive_with(env, args, &[], editor, fs, scenario)
}

/// [`drive`], with `vars` in the agent's environment.
fn drive_with<F>(
    env: &Env,
    args: &[&str],
    vars: &[(&str, String)],
    editor: Arc<Editor>,
    fs: bool,
    scenario: F,
) where
    F: AsyncFnOnce(Cx, Arc<Editor>) -> Result<(), Error>,
{
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let mut child = tokio::process::Command::new(assert_cmd::cargo::cargo_bin("cogni"))
            .arg("acp")
            .args(args)
            .current_dir(env.work())
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("HOME", env.dir.path().join("home"))
            .env("COGNI_HOME", env.dir.path().join("home"))
            .envs(vars.iter().map(|(k, v)| (k, v)))
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .unwrap();
        let stdin = child.stdin.take().unwrap().compat_write();
        let stdout = child.stdout.take().unwrap().compat();
        let client = client(editor.clone()).connect_with(
            ByteStreams::new(stdin, stdout),
            async move |cx: Cx| {
                let init = acp::InitializeRequest::new(ProtocolVersion::V1).client_capabilities(
                    acp::ClientCapabilities::new().fs(acp::FileSystemCapabilities::new()
                        .read_text_file(fs)
                        .write_text_file(fs)),
                );
                let init = cx.send_request(init).block_task().await?;
                assert_eq!(init.protocol_version, ProtocolVersion::V1);
                let caps = &init.agent_capabilities;
                assert!(caps.load_session, "{caps:?}");
                assert!(caps.session_capabilities.list.is_some(), "{caps:?}");
                assert!(caps.prompt_capabilities.image, "{caps:?}");
                scenario(cx, editor).await
            },
        );
        tokio::time::timeout(LIMIT, client)
            .await
            .expect("the scenario finished in time")
            .expect("the scenario went as planned");
        // The connection is gone, so is stdin: the agent ends everything.
        let status = tokio::time::timeout(LIMIT, child.wait())
            .await
            .expect("cogni acp exited after stdin closed")
            .unwrap();
        assert_eq!(status.code(), Some(0));
    });
}

/// The client: records updates, answers permissions as told, and serves
/// files from its buffers (or the disk).
fn client(
    editor: Arc<Editor>,
) -> agent_client_protocol::v1::Builder<
    Client,
    impl agent_client_protocol::HandleDispatchFrom<agent_client_protocol::Agent>,
> {
    let (updates, permissions, reads, writes) =
        (editor.clone(), editor.clone(), editor.clone(), editor);
    Client
        .v1()
        .on_receive_notification(
            async move |note: acp::SessionNotification, _cx| {
                updates.updates.lock().unwrap().push(note.update);
                updates.seen.notify_waiters();
                Ok(())
            },
            agent_client_protocol::on_receive_notification!(),
        )
        .on_receive_request(
            async move |request: acp::RequestPermissionRequest, responder, cx| {
                let answer = permissions
                    .answer
                    .lock()
                    .unwrap()
                    .expect("a permission was expected");
                let session = request.session_id.clone();
                permissions.permissions.lock().unwrap().push(request);
                permissions.seen.notify_waiters();
                let outcome = match answer {
                    Answer::Allow => acp::RequestPermissionOutcome::Selected(
                        acp::SelectedPermissionOutcome::new("allow_once"),
                    ),
                    Answer::Reject => acp::RequestPermissionOutcome::Selected(
                        acp::SelectedPermissionOutcome::new("reject_once"),
                    ),
                    Answer::Cancel => {
                        cx.send_notification(acp::CancelNotification::new(session))?;
                        acp::RequestPermissionOutcome::Cancelled
                    }
                    Answer::Select(id) => acp::RequestPermissionOutcome::Selected(
                        acp::SelectedPermissionOutcome::new(id),
                    ),
                };
                responder.respond(acp::RequestPermissionResponse::new(outcome))
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |request: acp::ReadTextFileRequest, responder, _cx| {
                let buffered = reads.buffers.lock().unwrap().get(&request.path).cloned();
                let text = match buffered {
                    Some(text) => text,
                    None => std::fs::read_to_string(&request.path).map_err(|e| {
                        Error::new(
                            agent_client_protocol::ErrorCode::RESOURCE_NOT_FOUND,
                            e.to_string(),
                        )
                    })?,
                };
                responder.respond(acp::ReadTextFileResponse::new(text))
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |request: acp::WriteTextFileRequest, responder, _cx| {
                writes
                    .buffers
                    .lock()
                    .unwrap()
                    .insert(request.path, request.content);
                responder.respond(acp::WriteTextFileResponse::new())
            },
            agent_client_protocol::on_receive_request!(),
        )
}

pub(crate) async fn new_session(cx: &Cx, cwd: &Path) -> Result<acp::NewSessionResponse, Error> {
    cx.send_request(acp::NewSessionRequest::new(cwd))
        .block_task()
        .await
}

async fn prompt(cx: &Cx, session: &acp::SessionId, text: &str) -> Result<acp::StopReason, Error> {
    let request = acp::PromptRequest::new(session.clone(), vec![text.to_string().into()]);
    Ok(cx.send_request(request).block_task().await?.stop_reason)
}

fn tool_call<'a>(updates: &'a [acp::SessionUpdate], title: &str) -> &'a acp::ToolCall {
    updates
        .iter()
        .find_map(|u| match u {
            acp::SessionUpdate::ToolCall(c) if c.title.starts_with(title) => Some(c),
            _ => None,
        })
        .unwrap_or_else(|| panic!("no tool call `{title}`: {updates:#?}"))
}

/// The statuses a tool call went through after it was announced.
fn statuses(updates: &[acp::SessionUpdate], id: &acp::ToolCallId) -> Vec<acp::ToolCallStatus> {
    updates
        .iter()
        .filter_map(|u| match u {
            acp::SessionUpdate::ToolCallUpdate(c) if &c.tool_call_id == id => c.fields.status,
            _ => None,
        })
        .collect()
}

fn final_output(updates: &[acp::SessionUpdate], id: &acp::ToolCallId) -> String {
    updates
        .iter()
        .filter_map(|u| match u {
            acp::SessionUpdate::ToolCallUpdate(c) if &c.tool_call_id == id => {
                c.fields.raw_output.clone()
            }
            _ => None,
        })
        .filter_map(|v| v.as_str().map(String::from))
        .next_back()
        .unwrap_or_default()
}

fn modes_of(updates: &[acp::SessionUpdate]) -> Vec<String> {
    updates
        .iter()
        .filter_map(|u| match u {
            acp::SessionUpdate::CurrentModeUpdate(m) => Some(m.current_mode_id.to_string()),
            _ => None,
        })
        .collect()
}

fn commands_of(updates: &[acp::SessionUpdate]) -> Vec<Vec<String>> {
    updates
        .iter()
        .filter_map(|u| match u {
            acp::SessionUpdate::AvailableCommandsUpdate(c) => Some(
                c.available_commands
                    .iter()
                    .map(|c| c.name.clone())
                    .collect(),
            ),
            _ => None,
        })
        .collect()
}

fn call(name: &str, arguments: Value) -> Value {
    json!({ "name": name, "arguments": arguments })
}

#[test]
fn a_prompt_streams_thoughts_text_tool_calls_and_plans_through_the_editors_files() {
    let env = Env::new();
    // Act mode asks as the configured approval policy says.
    std::fs::write(
        env.dir.path().join("home/config.toml"),
        "approval_policy = \"untrusted\"\n[agent]\nenable_plan = true\n",
    )
    .unwrap();
    std::fs::write(env.work().join("notes.txt"), "saved notes\n").unwrap();
    let script = env.script_file(
        "script.toml",
        json!([
            { "text": "1. read the notes\n2. write the answer" },
            {
                "reasoning": "The notes first.",
                "text": "Reading the notes.",
                "tool_calls": [
                    call("update_plan", json!({ "plan": [
                        { "step": "read the notes", "status": "in_progress" },
                        { "step": "write the answer", "status": "pending" },
                    ]})),
                    call("read_file", json!({ "path": "notes.txt" })),
                ],
            },
            {
                "expect": "unsaved notes",
                "text": "Writing.",
                "tool_calls": [call("write_file", json!({ "path": "out.txt", "content": "hello\n" }))],
            },
            { "text": "All done." },
        ]),
    );
    let editor = Arc::new(Editor::default());
    let work = env.work();
    editor
        .buffers
        .lock()
        .unwrap()
        .insert(work.join("notes.txt"), "unsaved notes\n".into());
    let script = script.to_str().unwrap().to_string();
    drive(
        &env,
        &["--script", &script, "--mode", "act"],
        editor,
        true,
        async |cx, editor| {
            let session = new_session(&cx, &work).await?;
            let modes = session.modes.expect("the session has modes");
            assert_eq!(modes.current_mode_id.to_string(), "act");
            let offered: Vec<String> = modes
                .available_modes
                .iter()
                .map(|m| m.id.to_string())
                .collect();
            assert_eq!(offered, ["plan", "act", "auto"]);
            let id = session.session_id;
            editor
                .wait_for("command list", |u| {
                    matches!(u, acp::SessionUpdate::AvailableCommandsUpdate(_))
                })
                .await;

            *editor.answer.lock().unwrap() = Some(Answer::Allow);
            assert_eq!(
                prompt(&cx, &id, "answer the notes").await?,
                acp::StopReason::EndTurn
            );
            let updates = editor.updates();
            let thoughts = chunks(&updates, |u| match u {
                acp::SessionUpdate::AgentThoughtChunk(c) => Some(c),
                _ => None,
            });
            assert_eq!(thoughts, "The notes first.");
            let text = editor.text();
            assert!(
                text.contains("Reading the notes.") && text.ends_with("All done."),
                "{text}"
            );

            // The plan: the first one, then update_plan's.
            let plans: Vec<&acp::Plan> = updates
                .iter()
                .filter_map(|u| match u {
                    acp::SessionUpdate::Plan(p) => Some(p),
                    _ => None,
                })
                .collect();
            assert_eq!(plans.len(), 2, "{updates:#?}");
            assert_eq!(plans[1].entries[0].content, "read the notes");
            assert_eq!(plans[1].entries[0].status, acp::PlanEntryStatus::InProgress);
            assert_eq!(plans[1].entries[1].status, acp::PlanEntryStatus::Pending);
            assert_eq!(
                tool_call(&updates, "Update the plan").kind,
                acp::ToolKind::Think
            );

            // read_file: a read of notes.txt, through the editor's buffer.
            let read = tool_call(&updates, "Read notes.txt");
            assert_eq!(read.kind, acp::ToolKind::Read);
            assert_eq!(read.status, acp::ToolCallStatus::InProgress);
            assert_eq!(read.locations[0].path, work.join("notes.txt"));
            assert_eq!(
                statuses(&updates, &read.tool_call_id),
                [acp::ToolCallStatus::Completed]
            );
            assert!(final_output(&updates, &read.tool_call_id).contains("unsaved notes"));

            // write_file: an edit with its diff, asked (act mode), allowed,
            // written into the editor's buffer and not to disk.
            let write = tool_call(&updates, "Write out.txt");
            assert_eq!(write.kind, acp::ToolKind::Edit);
            assert_eq!(write.locations[0].path, work.join("out.txt"));
            match &write.content[0] {
                acp::ToolCallContent::Diff(diff) => {
                    assert_eq!(diff.new_text, "hello\n");
                    assert_eq!(diff.old_text, None, "a new file");
                }
                other => panic!("{other:?}"),
            }
            let asked = editor.permissions.lock().unwrap().clone();
            assert_eq!(asked.len(), 1, "only the write is asked: {asked:#?}");
            assert_eq!(asked[0].tool_call.tool_call_id, write.tool_call_id);
            assert_eq!(
                asked[0].tool_call.fields.title.as_deref(),
                Some("Write out.txt"),
                "the question names the call as it was announced"
            );
            assert_eq!(
                asked[0].tool_call.fields.status,
                Some(acp::ToolCallStatus::Pending)
            );
            let kinds: Vec<_> = asked[0].options.iter().map(|o| o.kind).collect();
            assert_eq!(
                kinds,
                [
                    acp::PermissionOptionKind::AllowOnce,
                    acp::PermissionOptionKind::AllowAlways,
                    acp::PermissionOptionKind::RejectOnce
                ]
            );
            assert_eq!(
                statuses(&updates, &write.tool_call_id),
                [
                    acp::ToolCallStatus::Pending,
                    acp::ToolCallStatus::InProgress,
                    acp::ToolCallStatus::Completed
                ]
            );
            assert_eq!(
                editor.buffers.lock().unwrap()[&work.join("out.txt")],
                "hello\n"
            );
            assert!(
                !work.join("out.txt").exists(),
                "written through the editor only"
            );

            // Modes: set_mode checks the id and says what changed; /mode too.
            editor.clear();
            cx.send_request(acp::SetSessionModeRequest::new(id.clone(), "plan"))
                .block_task()
                .await?;
            let bad = cx
                .send_request(acp::SetSessionModeRequest::new(id.clone(), "code"))
                .block_task()
                .await;
            let bad = bad.expect_err("an unknown mode is refused");
            assert_eq!(bad.code, agent_client_protocol::ErrorCode::INVALID_PARAMS);
            assert!(bad.message.contains("plan, act, auto"), "{}", bad.message);
            assert_eq!(prompt(&cx, &id, "/mode").await?, acp::StopReason::EndTurn);
            let listing = editor.text();
            assert!(listing.contains("mode: plan\n"), "{listing}");
            assert!(
                listing.contains("act   change files and run commands: sandbox workspace-write, approval untrusted (asks before anything not known to be safe)"),
                "act says what it does: {listing}"
            );
            assert_eq!(
                prompt(&cx, &id, "/mode auto").await?,
                acp::StopReason::EndTurn
            );
            assert!(
                editor
                    .text()
                    .contains("mode: auto (change files and run commands: sandbox workspace-write, approval never (never asks))"),
                "{}",
                editor.text()
            );
            assert_eq!(modes_of(&editor.updates()), ["plan", "auto"]);
            Ok(())
        },
    );
}

#[test]
fn slash_commands_are_advertised_updated_and_namespaced() {
    let env = Env::new();
    let commands = env.dir.path().join("home/commands");
    std::fs::create_dir_all(&commands).unwrap();
    // An untrusted project's commands are never offered.
    let project = env.work().join(".cogni/commands");
    std::fs::create_dir_all(&project).unwrap();
    std::fs::write(project.join("mode.md"), "Do what the repository says.").unwrap();
    std::fs::write(project.join("deploy.md"), "Deploy.").unwrap();
    std::fs::write(commands.join("compact.md"), "Summarise $ARGUMENTS for me.").unwrap();
    std::fs::write(commands.join("help.md"), "Reserved: never offered.").unwrap();
    let script = env.script_file(
        "script.toml",
        json!([{ "text": "Summarised." }, { "text": "Reviewed." }]),
    );
    let editor = Arc::new(Editor::default());
    let work = env.work();
    let script = script.to_str().unwrap().to_string();
    drive(
        &env,
        &["--script", &script],
        editor,
        false,
        async |cx, editor| {
            let id = new_session(&cx, &work).await?.session_id;
            editor
                .wait_for("command list", |u| {
                    matches!(u, acp::SessionUpdate::AvailableCommandsUpdate(_))
                })
                .await;
            let first = commands_of(&editor.updates()).remove(0);
            assert_eq!(
            first,
            [
                "help",
                "mode",
                "model",
                "cogni:compact",
                "context",
                "review",
                "plan",
                "undo",
                "rewind",
                "diff",
                "compact"
            ],
            "your /compact takes the name; the built-in moves to /cogni:compact; /help stays cogni's; \
             the untrusted project's /mode and /deploy are not offered"
        );
            // The agent's command is a prompt for the model.
            assert_eq!(
                prompt(&cx, &id, "/compact the notes").await?,
                acp::StopReason::EndTurn
            );
            assert_eq!(editor.text(), "Summarised.");
            // The built-in answers itself.
            editor.clear();
            assert_eq!(
                prompt(&cx, &id, "/cogni:context").await?,
                acp::StopReason::EndTurn
            );
            assert!(editor.text().starts_with("context: "), "{}", editor.text());
            assert_eq!(prompt(&cx, &id, "/help").await?, acp::StopReason::EndTurn);
            assert!(
                editor.text().contains("`/cogni:compact`"),
                "{}",
                editor.text()
            );
            assert!(
                commands_of(&editor.updates()).is_empty(),
                "nothing changed, nothing sent"
            );
            // A new command file: the next prompt brings the new list.
            std::fs::write(commands.join("review.md"), "Review $ARGUMENTS.").unwrap();
            editor.clear();
            assert_eq!(
                prompt(&cx, &id, "/review src").await?,
                acp::StopReason::EndTurn
            );
            let lists = commands_of(&editor.updates());
            assert_eq!(lists.len(), 1, "{lists:?}");
            assert!(lists[0].contains(&"review".to_string()), "{lists:?}");
            assert_eq!(editor.text(), "Reviewed.");
            Ok(())
        },
    );
}

#[test]
fn cancel_stops_a_turn_and_a_rejected_write_fails() {
    let env = Env::new();
    // Unique, to find the command's process.
    let marker = format!("sleep 3{}.5", std::process::id() % 1000);
    let script = env.script_file(
        "script.toml",
        json!([
            { "text": "Waiting.", "tool_calls": [call("shell", json!({ "command": marker }))] },
            { "text": "Writing.", "tool_calls": [call("write_file", json!({ "path": "denied.txt", "content": "no" }))] },
            { "text": "Understood." },
            { "text": "Again.", "tool_calls": [call("write_file", json!({ "path": "later.txt", "content": "no" }))] },
        ]),
    );
    let editor = Arc::new(Editor::default());
    let work = env.work();
    let script = script.to_str().unwrap().to_string();
    let needle = marker.clone();
    drive(
        &env,
        &[
            "--script",
            &script,
            "--mode",
            "auto",
            "--approval",
            "untrusted",
        ],
        editor,
        false,
        async |cx, editor| {
            let id = new_session(&cx, &work).await?.session_id;
            // A command that would run for half a minute, cancelled.
            let running = cx.send_request(acp::PromptRequest::new(
                id.clone(),
                vec!["wait".to_string().into()],
            ));
            editor
                .wait_for(
                    "the command's start",
                    |u| matches!(u, acp::SessionUpdate::ToolCall(c) if c.title == needle),
                )
                .await;
            cx.send_notification(acp::CancelNotification::new(id.clone()))?;
            assert_eq!(
                running.block_task().await?.stop_reason,
                acp::StopReason::Cancelled
            );
            let updates = editor.updates();
            let sleep = tool_call(&updates, &needle);
            assert_eq!(
                statuses(&updates, &sleep.tool_call_id),
                [acp::ToolCallStatus::Failed]
            );
            gone(&needle).await;

            // Act mode asks; the editor rejects: the call fails, nothing is written.
            assert_eq!(
                prompt(&cx, &id, "/mode act").await?,
                acp::StopReason::EndTurn
            );
            editor.clear();
            *editor.answer.lock().unwrap() = Some(Answer::Reject);
            assert_eq!(
                prompt(&cx, &id, "write it").await?,
                acp::StopReason::EndTurn
            );
            let updates = editor.updates();
            let write = tool_call(&updates, "Write denied.txt");
            assert_eq!(
                statuses(&updates, &write.tool_call_id),
                [acp::ToolCallStatus::Pending, acp::ToolCallStatus::Failed],
                "{updates:#?}"
            );
            assert!(
                final_output(&updates, &write.tool_call_id).contains("denied"),
                "{updates:#?}"
            );
            assert!(!work.join("denied.txt").exists());
            assert!(editor.text().ends_with("Understood."));

            // The editor cancels the prompt while it is asked: the turn stops.
            editor.clear();
            *editor.answer.lock().unwrap() = Some(Answer::Cancel);
            assert_eq!(
                prompt(&cx, &id, "write it again").await?,
                acp::StopReason::Cancelled
            );
            assert!(!work.join("later.txt").exists());
            assert_eq!(editor.permissions.lock().unwrap().len(), 2);
            Ok(())
        },
    );
    assert!(
        processes_with(&marker).is_empty(),
        "no command outlives cogni acp"
    );
}

#[test]
fn the_models_questions_are_permission_requests_with_its_options() {
    let env = Env::new();
    let ask = call(
        "ask_user",
        json!({
            "question": "Which database?",
            "options": [{ "label": "SQLite", "description": "one file" }, { "label": "Postgres" }],
            "default": "SQLite",
        }),
    );
    let script = env.script_file(
        "script.toml",
        json!([
            { "text": "Asking.", "tool_calls": [ask.clone()] },
            { "text": "Postgres it is.", "expect": "The user chose: Postgres" },
            { "text": "Asking again.", "tool_calls": [ask] },
            { "text": "I will decide.", "expect": "The user declined to answer" },
        ]),
    );
    let editor = Arc::new(Editor::default());
    let work = env.work();
    let script = script.to_str().unwrap().to_string();
    // Plan mode offers the tool too.
    drive(
        &env,
        &["--script", &script, "--mode", "plan"],
        editor,
        false,
        async |cx, editor| {
            let id = new_session(&cx, &work).await?.session_id;
            *editor.answer.lock().unwrap() = Some(Answer::Select("option_2"));
            assert_eq!(
                prompt(&cx, &id, "set up the cache").await?,
                acp::StopReason::EndTurn
            );
            let updates = editor.updates();
            let asked = tool_call(&updates, "Ask: Which database?");
            assert_eq!(asked.kind, acp::ToolKind::Think);
            assert_eq!(
                statuses(&updates, &asked.tool_call_id),
                [
                    acp::ToolCallStatus::Pending,
                    acp::ToolCallStatus::InProgress,
                    acp::ToolCallStatus::Completed
                ],
                "{updates:#?}"
            );
            assert_eq!(
                final_output(&updates, &asked.tool_call_id),
                "The user chose: Postgres"
            );
            assert!(
                editor.text().ends_with("Postgres it is."),
                "{}",
                editor.text()
            );
            let request = editor.permissions.lock().unwrap()[0].clone();
            assert_eq!(
                request.tool_call.fields.title.as_deref(),
                Some("Which database?")
            );
            let options: Vec<(String, String, acp::PermissionOptionKind)> = request
                .options
                .iter()
                .map(|o| (o.option_id.to_string(), o.name.clone(), o.kind))
                .collect();
            assert_eq!(
                options,
                [
                    (
                        "option_1".into(),
                        "SQLite (recommended): one file".into(),
                        acp::PermissionOptionKind::AllowOnce
                    ),
                    (
                        "option_2".into(),
                        "Postgres".into(),
                        acp::PermissionOptionKind::AllowOnce
                    ),
                    (
                        "decline".into(),
                        "Decline to answer".into(),
                        acp::PermissionOptionKind::RejectOnce
                    ),
                ]
            );

            editor.clear();
            *editor.answer.lock().unwrap() = Some(Answer::Select("decline"));
            assert_eq!(
                prompt(&cx, &id, "and again").await?,
                acp::StopReason::EndTurn
            );
            assert!(
                editor.text().ends_with("I will decide."),
                "{}",
                editor.text()
            );
            assert_eq!(editor.permissions.lock().unwrap().len(), 2);
            Ok(())
        },
    );
}

/// Wait (within [`LIMIT`]) until no process runs `needle`.
async fn gone(needle: &str) {
    let waiting = async {
        while !processes_with(needle).is_empty() {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    };
    tokio::time::timeout(LIMIT, waiting)
        .await
        .unwrap_or_else(|_| panic!("`{needle}` still runs"));
}

#[test]
fn saved_sessions_are_listed_and_load_replays_them() {
    let env = Env::new();
    let work = env.work();
    let first = env.script_file(
        "first.toml",
        json!([
            { "reasoning": "Look first.", "text": "Listing.", "tool_calls": [call("shell", json!({ "command": "echo listed" }))] },
            { "text": "It printed listed." },
        ]),
    );
    let first = first.to_str().unwrap().to_string();
    let saved = Arc::new(Mutex::new(None));
    let keep = saved.clone();
    drive(
        &env,
        &["--script", &first, "--mode", "auto"],
        Arc::new(Editor::default()),
        false,
        async |cx, _| {
            let id = new_session(&cx, &work).await?.session_id;
            assert_eq!(
                prompt(&cx, &id, "list things").await?,
                acp::StopReason::EndTurn
            );
            *keep.lock().unwrap() = Some(id);
            Ok(())
        },
    );
    let id = saved.lock().unwrap().clone().unwrap();

    let second = env.script_file("second.toml", json!([{ "text": "Continued." }]));
    let second = second.to_str().unwrap().to_string();
    drive(
        &env,
        &["--script", &second],
        Arc::new(Editor::default()),
        false,
        async |cx, editor| {
            let listed = cx
                .send_request(acp::ListSessionsRequest::new())
                .block_task()
                .await?;
            assert_eq!(listed.sessions.len(), 1, "{listed:?}");
            assert_eq!(listed.sessions[0].session_id, id);
            assert_eq!(listed.sessions[0].title.as_deref(), Some("list things"));
            assert_eq!(listed.sessions[0].cwd, work);
            let elsewhere = cx
                .send_request(acp::ListSessionsRequest::new().cwd(env.dir.path().to_path_buf()))
                .block_task()
                .await?;
            assert!(elsewhere.sessions.is_empty(), "filtered by cwd");

            let loaded = cx
                .send_request(acp::LoadSessionRequest::new(id.clone(), &work))
                .block_task()
                .await?;
            assert_eq!(loaded.modes.map(|m| m.available_modes.len()), Some(3));
            let updates = editor.updates();
            let said = chunks(&updates, |u| match u {
                acp::SessionUpdate::UserMessageChunk(c) => Some(c),
                _ => None,
            });
            assert_eq!(said, "list things");
            let thought = chunks(&updates, |u| match u {
                acp::SessionUpdate::AgentThoughtChunk(c) => Some(c),
                _ => None,
            });
            assert_eq!(thought, "Look first.");
            assert_eq!(editor.text(), "Listing.It printed listed.");
            let shell = tool_call(&updates, "echo listed");
            assert_eq!(shell.kind, acp::ToolKind::Execute);
            assert_eq!(
                statuses(&updates, &shell.tool_call_id),
                [acp::ToolCallStatus::Completed]
            );
            assert!(final_output(&updates, &shell.tool_call_id).contains("listed"));

            // The loaded session goes on.
            editor.clear();
            assert_eq!(prompt(&cx, &id, "go on").await?, acp::StopReason::EndTurn);
            assert_eq!(editor.text(), "Continued.");

            let missing = cx
                .send_request(acp::LoadSessionRequest::new("no-such-session", &work))
                .block_task()
                .await
                .expect_err("an unknown session is refused");
            assert!(
                missing.message.contains("no saved session"),
                "{}",
                missing.message
            );
            let unknown = prompt(&cx, &acp::SessionId::new("nope"), "hi")
                .await
                .expect_err("no such session");
            assert!(
                unknown.message.contains("session/new"),
                "{}",
                unknown.message
            );
            Ok(())
        },
    );
}

#[test]
fn closing_stdin_mid_turn_stops_everything_and_exits_0() {
    let env = Env::new();
    let marker = format!("sleep 4{}.5", std::process::id() % 1000);
    let script = env.script_file(
        "script.toml",
        json!([{ "text": "Waiting.", "tool_calls": [call("shell", json!({ "command": marker }))] }]),
    );
    let editor = Arc::new(Editor::default());
    let work = env.work();
    let script = script.to_str().unwrap().to_string();
    let needle = marker.clone();
    drive(
        &env,
        &["--script", &script, "--mode", "auto"],
        editor,
        false,
        async |cx, editor| {
            let id = new_session(&cx, &work).await?.session_id;
            let running =
                cx.send_request(acp::PromptRequest::new(id, vec!["wait".to_string().into()]));
            editor
                .wait_for(
                    "the command's start",
                    |u| matches!(u, acp::SessionUpdate::ToolCall(c) if c.title == needle),
                )
                .await;
            // The editor goes away with the prompt still running.
            running.detach();
            Ok(())
        },
    );
    assert!(
        processes_with(&marker).is_empty(),
        "no command outlives cogni acp"
    );
}

/// `cogni acp --model gpt-4.1` against `server` as the OpenAI provider,
/// driven by `scenario`.
pub(crate) fn drive_against<F>(env: &Env, server: &MockServer, scenario: F)
where
    F: AsyncFnOnce(Cx, Arc<Editor>) -> Result<(), Error>,
{
    drive_with(
        env,
        &["--model", "gpt-4.1"],
        &[
            ("OPENAI_BASE_URL", server.base_url()),
            ("OPENAI_API_KEY", "sk-test-key-for-the-mock".into()),
        ],
        Arc::new(Editor::default()),
        false,
        scenario,
    );
}

/// Whether any of `lines` contains `needle`.
pub(crate) fn mentions(lines: &[String], needle: &str) -> bool {
    lines.iter().any(|l| l.contains(needle))
}

/// Send `text` as a prompt; the turn must end normally. The agent's text.
pub(crate) async fn say(
    cx: &Cx,
    editor: &Editor,
    id: &acp::SessionId,
    text: &str,
) -> Result<String, Error> {
    editor.clear();
    assert_eq!(prompt(cx, id, text).await?, acp::StopReason::EndTurn);
    Ok(editor.text())
}

#[test]
fn compact_summarises_the_history_and_the_next_request_carries_the_summary() {
    let env = Env::new();
    let server = MockServer::start();
    for answer in [
        "ALPHA-ANSWER",
        "BETA-ANSWER",
        "SUMMARY-OF-ALPHA-AND-BETA",
        "GAMMA-ANSWER",
    ] {
        server.enqueue(chat::text_response(answer));
    }
    let work = env.work();
    drive_against(&env, &server, async |cx, editor| {
        let id = new_session(&cx, &work).await?.session_id;
        assert_eq!(
            say(&cx, &editor, &id, "first question alpha").await?,
            "ALPHA-ANSWER"
        );
        assert_eq!(
            say(&cx, &editor, &id, "second question beta").await?,
            "BETA-ANSWER"
        );
        let compacted = say(&cx, &editor, &id, "/compact").await?;
        assert!(compacted.starts_with("compacted: "), "{compacted}");
        assert_eq!(
            say(&cx, &editor, &id, "third question gamma").await?,
            "GAMMA-ANSWER"
        );
        Ok(())
    });
    server.assert_invariants();
    let requests = server.requests();
    assert_eq!(requests.len(), 4);
    let summary = requests[2].message_lines();
    assert_eq!(
        summary.last().map(String::as_str),
        Some(format!("user: {SUMMARY_REQUEST}").as_str()),
        "{summary:#?}"
    );
    for said in ["first question alpha", "ALPHA-ANSWER", "BETA-ANSWER"] {
        assert!(mentions(&summary, said), "{said}: {summary:#?}");
    }
    // The summary instead of the old turns (compaction keeps the latest
    // request).
    let next = requests[3].message_lines();
    assert!(mentions(&next, "SUMMARY-OF-ALPHA-AND-BETA"), "{next:#?}");
    assert!(mentions(&next, "second question beta"), "{next:#?}");
    for gone in [
        "first question alpha",
        "ALPHA-ANSWER",
        "BETA-ANSWER",
        SUMMARY_REQUEST,
    ] {
        assert!(!mentions(&next, gone), "{gone} is still sent: {next:#?}");
    }
    assert_eq!(
        next.last().map(String::as_str),
        Some("user: third question gamma")
    );
    assert_eq!(requests[3].messages()[0], requests[0].messages()[0]);
}

#[test]
fn context_reset_and_summarize_change_what_the_model_receives_next() {
    let env = Env::new();
    std::fs::write(
        env.dir.path().join("home/config.toml"),
        "developer_instructions = \"DEV-RULES: be brief.\"\n[agent]\nenable_plan = true\n",
    )
    .unwrap();
    let server = MockServer::start();
    for answer in [
        "1. look around\n2. answer",
        "ONE-ANSWER",
        "TWO-ANSWER",
        "THREE-ANSWER",
        "SUMMARY-OF-TWO-AND-THREE",
        "FOUR-ANSWER",
    ] {
        server.enqueue(chat::text_response(answer));
    }
    let work = env.work();
    drive_against(&env, &server, async |cx, editor| {
        let id = new_session(&cx, &work).await?.session_id;
        assert_eq!(say(&cx, &editor, &id, "first task").await?, "ONE-ANSWER");
        assert_eq!(
            say(&cx, &editor, &id, "/context reset").await?,
            "context reset to the initial context"
        );
        assert_eq!(
            say(&cx, &editor, &id, "second message").await?,
            "TWO-ANSWER"
        );
        assert_eq!(
            say(&cx, &editor, &id, "third message").await?,
            "THREE-ANSWER"
        );
        let summarized = say(&cx, &editor, &id, "/context summarize").await?;
        assert!(
            summarized.starts_with("history replaced by a summary"),
            "{summarized}"
        );
        assert_eq!(
            say(&cx, &editor, &id, "fourth message").await?,
            "FOUR-ANSWER"
        );
        Ok(())
    });
    server.assert_invariants();
    let requests = server.requests();
    assert_eq!(requests.len(), 6);
    let first = requests[1].message_lines();
    assert_eq!(
        first.last().map(String::as_str),
        Some("user: first task"),
        "{first:#?}"
    );
    let initial = &first[..first.len() - 1];
    for kept in ["DEV-RULES", "1. look around", "<environment_context>"] {
        assert!(mentions(initial, kept), "{kept}: {initial:#?}");
    }
    // After reset: exactly the initial context, then the new message.
    let mut expected = initial.to_vec();
    expected.push("user: second message".into());
    assert_eq!(requests[2].message_lines(), expected);
    // After summarize: the instructions and the plan, the summary, and
    // none of the conversation.
    let summary = requests[4].message_lines();
    assert_eq!(
        summary.last().map(String::as_str),
        Some(format!("user: {SUMMARY_REQUEST}").as_str())
    );
    let next = requests[5].message_lines();
    for kept in [
        "DEV-RULES",
        "1. look around",
        "<environment_context>",
        "SUMMARY-OF-TWO-AND-THREE",
    ] {
        assert!(mentions(&next, kept), "{kept} is lost: {next:#?}");
    }
    for gone in [
        "first task",
        "second message",
        "TWO-ANSWER",
        "third message",
        "THREE-ANSWER",
        SUMMARY_REQUEST,
    ] {
        assert!(!mentions(&next, gone), "{gone} is still sent: {next:#?}");
    }
    assert_eq!(
        next.last().map(String::as_str),
        Some("user: fourth message")
    );
}

#[test]
fn undo_rewind_and_diff_take_turns_back_and_stop_at_hand_edits() {
    let env = Env::new();
    let work = env.work();
    std::fs::write(work.join("keep.txt"), "original\n").unwrap();
    let script = env.script_file(
        "script.toml",
        json!([
            { "tool_calls": [call("write_file", json!({ "path": "one.txt", "content": "1\n" }))] },
            { "text": "wrote one" },
            { "tool_calls": [call("write_file", json!({ "path": "keep.txt", "content": "two\n" }))] },
            { "text": "wrote two" },
        ]),
    );
    let script = script.to_str().unwrap().to_string();
    let editor = Arc::new(Editor::default());
    drive(
        &env,
        &["--script", &script, "--mode", "auto", "--no-sandbox"],
        editor,
        false,
        async |cx, editor| {
            let id = new_session(&cx, &work).await?.session_id;
            assert_eq!(say(&cx, &editor, &id, "first").await?, "wrote one");
            assert_eq!(say(&cx, &editor, &id, "second").await?, "wrote two");
            let diff = say(&cx, &editor, &id, "/diff").await?;
            assert!(diff.contains("+two") && diff.contains("+1"), "{diff}");
            let listed = say(&cx, &editor, &id, "/rewind").await?;
            assert!(
                listed.contains("first") && listed.contains("second"),
                "{listed}"
            );

            // keep.txt changed by hand since turn 2: /undo stops.
            std::fs::write(work.join("keep.txt"), "by hand\n").unwrap();
            let stopped = say(&cx, &editor, &id, "/undo").await?;
            assert!(stopped.contains("--keep-mine"), "{stopped}");
            assert_eq!(
                std::fs::read_to_string(work.join("keep.txt")).unwrap(),
                "by hand\n"
            );
            let forced = say(&cx, &editor, &id, "/undo --force").await?;
            assert!(forced.contains("removed turn 2"), "{forced}");
            assert_eq!(
                std::fs::read_to_string(work.join("keep.txt")).unwrap(),
                "original\n"
            );
            let undone = say(&cx, &editor, &id, "/undo").await?;
            assert!(undone.contains("remove     one.txt"), "{undone}");
            assert!(!work.join("one.txt").exists());
            let nothing = say(&cx, &editor, &id, "/undo").await?;
            assert!(nothing.contains("nothing to undo"), "{nothing}");
            Ok(())
        },
    );
}

#[test]
fn an_image_in_a_prompt_reaches_the_model_and_the_capability_is_advertised() {
    let env = Env::new();
    let server = MockServer::start();
    server.enqueue(chat::text_response("A RED SQUARE"));
    let work = env.work();
    let png = crate::common::images::png(12, 8);
    let data = crate::common::images::b64(&png);
    let sent = data.clone();
    drive_against(&env, &server, async |cx, editor| {
        // (`drive` checked that the agent advertises images.)
        let id = new_session(&cx, &work).await?.session_id;
        let blocks = vec![
            acp::ContentBlock::from("what is this?".to_string()),
            acp::ContentBlock::Image(
                acp::ImageContent::new(sent, "image/png").uri("file:///shots/square.png"),
            ),
        ];
        editor.clear();
        let request = acp::PromptRequest::new(id.clone(), blocks);
        let stop = cx.send_request(request).block_task().await?.stop_reason;
        assert_eq!(stop, acp::StopReason::EndTurn);
        assert_eq!(editor.text(), "A RED SQUARE");
        // Not an image at all: refused with the reason, nothing sent.
        let bad = vec![acp::ContentBlock::Image(acp::ImageContent::new(
            "bm90IGFuIGltYWdl",
            "image/png",
        ))];
        let refused = cx
            .send_request(acp::PromptRequest::new(id, bad))
            .block_task()
            .await
            .unwrap_err();
        assert!(
            refused.message.contains("not a PNG, JPEG, GIF or WebP"),
            "{refused:?}"
        );
        Ok(())
    });
    server.assert_invariants();
    let requests = server.requests();
    assert_eq!(requests.len(), 1);
    let user = requests[0].messages().last().cloned().unwrap();
    assert_eq!(user["content"][0]["text"], "what is this?");
    assert_eq!(
        user["content"][1]["image_url"]["url"],
        format!("data:image/png;base64,{data}")
    );
}
