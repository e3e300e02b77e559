//! `shell`: run a command (a shell string or an argv array) and report its
//! exit code, duration and capped output. Outside danger-full-access the
//! command runs in the kernel sandbox (`crate::sandbox`), prepared once per
//! session and policy, with the protected paths found just before it bound
//! read-only; protected names it created are moved aside after it.

use super::env::ShellEnvPolicy;
use super::output::{fmt_secs, push_block, render_streams, status_line};
use super::{apply_patch, parse_args, paths, Tool, ToolConfig, ToolContext, ToolInput, ToolResult};
use cogni_process::{self as exec, ExecOutput, ExecRequest};
use cogni_protocol::{CommandEnd, SandboxMode, SandboxPolicy, ToolFormat, ToolSpec};
use cogni_sandbox::protected::{Scan, Scanner};
use cogni_sandbox::{Confinement, Workspace};
use futures::future::BoxFuture;
use serde::Deserialize;
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

/// The `shell` tool: runs a command in the sandbox (or, approved, outside
/// it), in the foreground or as a background job.
pub struct ShellTool {
    description: String,
    escalation: bool,
    /// Offer `background` (background jobs are on).
    background: bool,
    env_policy: ShellEnvPolicy,
    /// The child environment, computed on first use: cogni's own
    /// environment does not change during a session, and compiling the
    /// policy's patterns for every command would cost more than the spawn.
    env: OnceLock<Result<BTreeMap<String, String>, String>>,
    /// The private temporary directory of sandboxed commands (removed with
    /// the tool, at the end of the session).
    temp_dir: OnceLock<Result<tempfile::TempDir, String>>,
    /// The confinement of the last (workspace, policy): preparing one
    /// builds the kernel rules.
    confinement: Mutex<Option<Prepared>>,
    /// Finds the protected paths before and after each command.
    scanner: Arc<Mutex<Scanner>>,
    /// The user was told the workspace is too large to scan in full.
    scan_warned: AtomicBool,
}

/// The protected paths a confined command started with, to move aside
/// what it created when it ends.
pub(super) struct Watch {
    scanner: Arc<Mutex<Scanner>>,
    roots: Vec<PathBuf>,
    before: Scan,
}

impl Watch {
    /// Move aside the protected names created since the command started;
    /// the note for the model, if there were any.
    pub(super) async fn finish(self, cwd: PathBuf) -> Option<String> {
        let moved = tokio::task::spawn_blocking(move || {
            let mut scanner = self.scanner.lock().unwrap_or_else(|e| e.into_inner());
            scanner.refuse_new(&self.roots, &self.before).0
        })
        .await
        .unwrap_or_default();
        protected_note(&cwd, &moved)
    }
}

/// A confinement and the workspace and policy it was prepared for.
type Prepared = (Arc<Workspace>, SandboxPolicy, Arc<Confinement>);

impl ShellTool {
    /// The tool with `config`'s timeouts, caps, environment policy and
    /// options (escalation, background jobs).
    pub fn new(config: &ToolConfig) -> Self {
        ShellTool {
            description: format!(
                "Run a command in the workspace; returns exit code, stdout, stderr. \
                 `command`: a string runs via the shell (-c), an array runs directly as argv. \
                 No stdin/TTY. Timeout {}s by default, `timeout_ms` up to {}s; \
                 the whole process group is killed on timeout. \
                 Output over {} bytes or {} lines keeps head and tail.{}",
                config.shell_timeout.as_secs(),
                config.max_shell_timeout.as_secs(),
                config.max_output_bytes,
                config.max_output_lines,
                if config.max_background_jobs > 0 {
                    " `background: true` starts a server or watcher and returns a job id at once \
                     (read with shell_output, stop with shell_kill)."
                } else {
                    ""
                },
            ),
            escalation: config.shell_escalation,
            background: config.max_background_jobs > 0,
            env_policy: config.shell_env.clone(),
            env: OnceLock::new(),
            temp_dir: OnceLock::new(),
            confinement: Mutex::new(None),
            scanner: Arc::default(),
            scan_warned: AtomicBool::new(false),
        }
    }

    /// The confinement for `ctx`, prepared on first use (blocking work on
    /// the blocking pool) and reused while its pinned workspace and policy
    /// stay the same.
    async fn confinement(&self, ctx: &ToolContext) -> Result<Arc<Confinement>, String> {
        if let Ok(cached) = self.confinement.lock() {
            if let Some((workspace, policy, c)) = cached.as_ref() {
                if Arc::ptr_eq(workspace, &ctx.workspace) && *policy == ctx.sandbox {
                    return Ok(c.clone());
                }
            }
        }
        let temp_dir = self
            .temp_dir
            .get_or_init(|| {
                // Private (0700): other users on the machine must not read
                // what commands leave there, nor plant files in it. (On
                // Windows the temporary directory is the user's own.)
                let mut builder = tempfile::Builder::new();
                builder.prefix("cogni-sandbox-");
                #[cfg(unix)]
                builder.permissions(std::os::unix::fs::PermissionsExt::from_mode(0o700));
                builder
                    .tempdir()
                    .map_err(|e| format!("cannot create the sandbox's temporary directory: {e}"))
            })
            .as_ref()
            .map_err(Clone::clone)?
            .path()
            .to_path_buf();
        let (workspace, policy) = (ctx.workspace.clone(), ctx.sandbox.clone());
        let prepared = tokio::task::spawn_blocking(move || {
            Confinement::new(&policy, &workspace, &temp_dir)
                .map(|c| (workspace, policy, Arc::new(c)))
        })
        .await
        .map_err(|e| format!("preparing the sandbox was interrupted: {e}"))?
        .map_err(|e| format!("cannot confine the command: {e}"))?;
        let confinement = prepared.2.clone();
        if let Ok(mut cached) = self.confinement.lock() {
            *cached = Some(prepared);
        }
        Ok(confinement)
    }
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Args {
    command: CommandArg,
    timeout_ms: Option<u64>,
    workdir: Option<String>,
    #[serde(default)]
    background: bool,
    // Read by the approval policy before the call reaches the tool.
    #[serde(default, rename = "escalate")]
    _escalate: bool,
    #[serde(default, rename = "justification")]
    _justification: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(untagged)]
enum CommandArg {
    Line(String),
    Argv(Vec<String>),
}

impl Tool for ShellTool {
    fn spec(&self) -> ToolSpec {
        let mut parameters = serde_json::json!({
            "type": "object",
            "properties": {
                "command": {"anyOf": [
                    {"type": "string"},
                    {"type": "array", "items": {"type": "string"}}
                ]},
                "timeout_ms": {"type": "integer", "minimum": 1},
                "workdir": {"type": "string", "description": "Relative to cwd, inside the workspace."}
            },
            "required": ["command"],
            "additionalProperties": false
        });
        if self.background {
            parameters["properties"]["background"] = serde_json::json!({"type": "boolean"});
        }
        if self.escalation {
            parameters["properties"]["escalate"] = serde_json::json!({
                "type": "boolean",
                "description": "Ask the user to run this without the sandbox (e.g. it needs the network or files outside the workspace)."
            });
            parameters["properties"]["justification"] = serde_json::json!({
                "type": "string",
                "description": "With escalate: one sentence the user reads to decide."
            });
        }
        ToolSpec {
            name: "shell".into(),
            description: self.description.clone(),
            format: ToolFormat::Function { parameters },
            read_only: false,
        }
    }

    fn run<'a>(&'a self, input: ToolInput, ctx: &'a ToolContext) -> BoxFuture<'a, ToolResult> {
        Box::pin(async move {
            let args = match parse_args::<Args>("shell", input) {
                Ok(args) => args,
                Err(result) => return result,
            };
            self.run_shell(args, ctx).await
        })
    }
}

impl ShellTool {
    async fn run_shell(&self, args: Args, ctx: &ToolContext) -> ToolResult {
        let config = &ctx.config;
        let cwd = match &args.workdir {
            Some(dir) => match paths::workspace_dir(ctx, dir).await {
                Ok(dir) => dir,
                Err(e) => {
                    return ToolResult::error(format!("invalid workdir: {e}; nothing was run"))
                }
            },
            None => ctx.cwd.clone(),
        };
        // `apply_patch <<'EOF' ... EOF` runs the built-in patch tool: model
        // families trained on it call it this way when it is not offered.
        let routed = match &args.command {
            CommandArg::Line(line) => apply_patch::shell_patch_from_script(line),
            CommandArg::Argv(argv) => apply_patch::shell_patch_from_argv(argv),
        };
        if let Some(call) = routed {
            let dir = match &call.workdir {
                Some(dir) => {
                    let sub = ToolContext {
                        cwd: cwd.clone(),
                        ..ctx.clone()
                    };
                    match paths::workspace_dir(&sub, dir).await {
                        Ok(dir) => dir,
                        Err(e) => {
                            return ToolResult::error(format!(
                                "invalid directory `{dir}`: {e}; nothing was changed"
                            ))
                        }
                    }
                }
                None => cwd,
            };
            return apply_patch::run_patch(ctx, dir, call.patch).await;
        }
        let shown = match &args.command {
            CommandArg::Line(line) => line.clone(),
            CommandArg::Argv(argv) => argv.join(" "),
        };
        let argv = match args.command {
            CommandArg::Line(line) => cogni_protocol::shell_argv(&ctx.sandbox.shell, &line),
            CommandArg::Argv(argv) => argv,
        };
        match argv.first() {
            Some(program) if !program.trim().is_empty() => {}
            _ => return ToolResult::error("`command` is empty; nothing was run"),
        }
        if args.background && !ctx.jobs.enabled() {
            return ToolResult::error(
                "background jobs are switched off (tools.max_background_jobs = 0); nothing was run",
            );
        }
        let timeout = if args.background {
            ctx.jobs.timeout(args.timeout_ms.map(Duration::from_millis))
        } else {
            args.timeout_ms
                .map_or(config.shell_timeout, Duration::from_millis)
                .min(config.max_shell_timeout)
        };
        let env = match self.child_env() {
            Ok(env) => env,
            Err(e) => return ToolResult::error(e),
        };
        let (request, sandbox, watch) = match self
            .prepare(ctx, argv, cwd, env, timeout, config.capture_limit_bytes)
            .await
        {
            Ok(prepared) => prepared,
            Err(e) => return ToolResult::error(format!("{e}; nothing was run")),
        };
        if args.background {
            return self.start_job(ctx, request, shown, watch);
        }
        let result = exec::run(request).await;
        let refused = match watch {
            Some(watch) => watch.finish(ctx.cwd.clone()).await,
            None => None,
        };
        let mut result = match result {
            Ok(output) => render(&output, timeout, config),
            Err(e) => return ToolResult::error(e.to_string()),
        };
        if let Some(sandbox) = &sandbox {
            if result.is_error {
                if let Some(note) = sandbox.explain_failure(&result.content) {
                    push_block(&mut result.content, &note);
                }
            }
        }
        if let Some(note) = refused {
            push_block(&mut result.content, &note);
            result.is_error = true;
        }
        result
    }

    /// The child environment (computed once).
    fn child_env(&self) -> Result<BTreeMap<String, String>, String> {
        self.env
            .get_or_init(|| self.env_policy.child_env().map_err(|e| e.to_string()))
            .clone()
    }

    /// `argv` as a request confined by `ctx`'s policy (unless it is
    /// danger-full-access), with the sandbox's temporary directory and the
    /// protected paths found now bound read-only, and the [`Watch`] that
    /// moves aside what the command creates of them.
    async fn prepare(
        &self,
        ctx: &ToolContext,
        argv: Vec<String>,
        cwd: PathBuf,
        mut env: BTreeMap<String, String>,
        timeout: Duration,
        capture_limit_bytes: usize,
    ) -> Result<(ExecRequest, Option<Arc<Confinement>>, Option<Watch>), String> {
        let sandbox = if ctx.sandbox.mode == SandboxMode::DangerFullAccess {
            None
        } else {
            Some(self.confinement(ctx).await?)
        };
        if let Some(temp) = sandbox.as_ref().and_then(|c| c.temp_dir()) {
            for var in ["TMPDIR", "TMP", "TEMP"] {
                env.insert(var.to_string(), temp.display().to_string());
            }
        }
        let (confined, watch) = match &sandbox {
            Some(confinement) => {
                let watch = self.scan(ctx, confinement.workspace_roots()).await?;
                let confined = confinement
                    .confine(&watch.before)
                    .map_err(|e| format!("cannot confine the command: {e}"))?;
                (Some(Arc::new(confined)), Some(watch))
            }
            None => (None, None),
        };
        let request = ExecRequest {
            argv,
            cwd,
            env,
            timeout,
            capture_limit_bytes,
            kill_grace: exec::DEFAULT_KILL_GRACE,
            io_drain: exec::DEFAULT_IO_DRAIN,
            sandbox: confined,
            stdin: None,
        };
        Ok((request, sandbox, watch))
    }

    /// The protected paths under `roots` now, as a [`Watch`] for a command
    /// about to start.
    async fn scan(&self, ctx: &ToolContext, roots: &[PathBuf]) -> Result<Watch, String> {
        let scanner = self.scanner.clone();
        let roots = roots.to_vec();
        let watch = tokio::task::spawn_blocking(move || {
            let before = scanner
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .scan(&roots);
            Watch {
                scanner,
                roots,
                before,
            }
        })
        .await
        .map_err(|e| format!("scanning for protected paths was interrupted: {e}"))?;
        if !watch.before.complete && !self.scan_warned.swap(true, Ordering::Relaxed) {
            tracing::warn!(
                cwd = %ctx.cwd.display(),
                "the workspace is too large to scan fully for protected paths (.git, .cogni, ...); \
                 some nested ones are not bound read-only or checked after commands"
            );
        }
        Ok(watch)
    }

    /// Run `command` (a shell line; stderr joins stdout, so the output is
    /// in the order it was written) in `ctx.cwd`, confined like every
    /// `shell` call, keeping up to `capture_limit_bytes` of output: for
    /// cogni's own commands in the sandbox, like the test command of the
    /// test-driven loop. The error text of a protected path the command
    /// created comes with the output.
    pub async fn run_command(
        &self,
        ctx: &ToolContext,
        command: &str,
        timeout: Duration,
        capture_limit_bytes: usize,
    ) -> Result<(ExecOutput, Option<String>), String> {
        let argv = cogni_protocol::shell_argv_merged(&ctx.sandbox.shell, command);
        let env = self.child_env()?;
        let (request, _sandbox, watch) = self
            .prepare(
                ctx,
                argv,
                ctx.cwd.clone(),
                env,
                timeout,
                capture_limit_bytes,
            )
            .await?;
        let output = exec::run(request).await;
        let refused = match watch {
            Some(watch) => watch.finish(ctx.cwd.clone()).await,
            None => None,
        };
        Ok((output.map_err(|e| e.to_string())?, refused))
    }

    /// Start `request` as a background job; the model gets its id at once.
    fn start_job(
        &self,
        ctx: &ToolContext,
        request: ExecRequest,
        shown: String,
        watch: Option<Watch>,
    ) -> ToolResult {
        let timeout = request.timeout;
        let cwd = ctx.cwd.clone();
        let on_end: super::jobs::OnEnd = Box::new(move || {
            Box::pin(async move {
                match watch {
                    Some(watch) => watch.finish(cwd).await,
                    None => None,
                }
            })
        });
        match ctx.jobs.start(request, shown.clone(), on_end) {
            Ok(id) => ToolResult::ok(format!(
                "started background job {id}: `{shown}`. It runs until it exits, shell_kill \
                 stops it, or {}s pass; shell_output reads what it writes (wait_ms waits for more).",
                fmt_secs(timeout)
            )),
            Err(e) => ToolResult::error(format!("{e}; nothing was run")),
        }
    }
}

/// The error for protected names a command created (and cogni moved
/// aside).
fn protected_note(cwd: &std::path::Path, moved: &[PathBuf]) -> Option<String> {
    if moved.is_empty() {
        return None;
    }
    let names: Vec<String> = moved.iter().map(|p| paths::display(cwd, p)).collect();
    Some(format!(
        "error: the command created {}, which the sandbox protects wherever they are (.git steers \
         git; .cogni, cogni.toml and AGENTS.md steer cogni); {} moved aside to the same name \
         with `{}` added. Ask the user to make this change.",
        names.join(", "),
        if names.len() == 1 {
            "it was"
        } else {
            "they were"
        },
        cogni_sandbox::protected::REFUSED_SUFFIX
    ))
}

/// Header line, then stdout, then stderr (labelled) when there is any.
fn render(output: &ExecOutput, timeout: Duration, config: &ToolConfig) -> ToolResult {
    let mut text = status_line(
        output.termination,
        output.timed_out.then_some(timeout),
        output.duration,
    );
    text.push('\n');
    let output_start = text.len();
    if output.output_left_open {
        let _ = writeln!(
            text,
            "note: a background process kept stdout/stderr open; later output was not read"
        );
    }
    let limits = config.output_limits();
    let streams = render_streams(&output.stdout, &output.stderr, limits);
    text.push_str(if streams.is_empty() {
        "(no output)\n"
    } else {
        &streams
    });
    ToolResult {
        content: text,
        is_error: output.timed_out || !output.termination.success(),
        command: Some(CommandEnd {
            exit_code: (!output.timed_out).then(|| output.termination.exit_code()),
            output_start,
        }),
        diff: None,
        images: Vec::new(),
    }
}

/// The shell output in the plain layout models trained with a freeform
/// `apply_patch` tool expect (`Exit code:` / `Wall time:` / `Output:`),
/// from the header `render` writes. Text without that header is returned
/// unchanged.
pub fn normalize_output(content: &str) -> String {
    let (header, body) = content.split_once('\n').unwrap_or((content, ""));
    let (timed_out, status) = match header.split_once("; ") {
        Some((t, rest)) if t.starts_with("timed out after ") => (Some(t), rest),
        _ => (None, header),
    };
    let Some((status, secs)) = status.rsplit_once(", ") else {
        return content.to_string();
    };
    let Some(secs) = secs.strip_suffix('s').filter(|s| s.parse::<f64>().is_ok()) else {
        return content.to_string();
    };
    let code = if let Some(code) = status
        .strip_prefix("exit code ")
        .filter(|c| c.parse::<i32>().is_ok())
    {
        code.to_string()
    } else if let Some(signal) = status.strip_prefix("killed by signal ") {
        let number = signal.split(' ').next().unwrap_or("");
        match number.parse::<i32>() {
            Ok(n) => (128 + n).to_string(),
            Err(_) => return content.to_string(),
        }
    } else {
        return content.to_string();
    };
    let mut out = format!("Exit code: {code}\nWall time: {secs} seconds\n");
    if let Some(t) = timed_out {
        out.push_str(&format!("Note: {t}\n"));
    }
    out.push_str("Output:\n");
    out.push_str(body);
    out
}

// Unix: they run `sh` scripts (and the shell tool's need a sandbox).
#[cfg(all(test, unix))]
mod tests {
    use super::*;
    use crate::paths::tests::ctx;
    use cogni_protocol::SandboxMode;
    use std::sync::Arc;

    async fn shell(ctx: &ToolContext, args: serde_json::Value) -> ToolResult {
        ShellTool::new(&ctx.config)
            .run(ToolInput::Json(args), ctx)
            .await
    }

    fn tmp_ctx() -> (tempfile::TempDir, ToolContext) {
        let tmp = tempfile::tempdir().unwrap();
        let c = ctx(
            &tmp.path().canonicalize().unwrap(),
            SandboxMode::WorkspaceWrite,
        );
        (tmp, c)
    }

    #[tokio::test]
    async fn string_runs_in_the_shell() {
        let (_tmp, c) = tmp_ctx();
        let r = shell(&c, serde_json::json!({"command": "echo hi | tr a-z A-Z"})).await;
        assert_eq!(r.exit_code(), Some(0));
        assert!(!r.is_error);
        assert!(r.content.starts_with("exit code 0, "), "{}", r.content);
        assert!(r.content.ends_with("s\nHI\n"), "{}", r.content);
    }

    #[tokio::test]
    async fn apply_patch_through_the_shell_uses_the_builtin_tool() {
        let (tmp, c) = tmp_ctx();
        std::fs::create_dir(tmp.path().join("sub")).unwrap();
        let script = "cd sub && apply_patch <<'EOF'\n*** Begin Patch\n*** Add File: new.txt\n+hello\n*** End Patch\nEOF\n";
        let r = shell(&c, serde_json::json!({ "command": script })).await;
        assert!(!r.is_error, "{}", r.content);
        assert_eq!(r.content.trim(), "A new.txt");
        assert_eq!(
            std::fs::read_to_string(tmp.path().join("sub/new.txt")).unwrap(),
            "hello\n"
        );

        let patch = "*** Begin Patch\n*** Delete File: sub/new.txt\n*** End Patch";
        let argv = serde_json::json!({ "command": ["apply_patch", patch] });
        let read_only = ctx(&tmp.path().canonicalize().unwrap(), SandboxMode::ReadOnly);
        let r = shell(&read_only, argv.clone()).await;
        assert!(r.is_error, "{}", r.content);
        assert!(tmp.path().join("sub/new.txt").exists());
        let r = shell(&c, argv).await;
        assert!(!r.is_error, "{}", r.content);
        assert!(!tmp.path().join("sub/new.txt").exists());
    }

    #[tokio::test]
    async fn outputs_normalize_to_the_freeform_layout() {
        let (_tmp, c) = tmp_ctx();
        let r = shell(&c, serde_json::json!({"command": "echo out; exit 2"})).await;
        let n = normalize_output(&r.content);
        assert!(n.starts_with("Exit code: 2\nWall time: "), "{n}");
        assert!(n.ends_with(" seconds\nOutput:\nout\n"), "{n}");
        let timed = "timed out after 1s; killed by signal 15 (SIGTERM), 1.0s\npartial\n";
        assert_eq!(
            normalize_output(timed),
            "Exit code: 143\nWall time: 1.0 seconds\nNote: timed out after 1s\nOutput:\npartial\n"
        );
        for untouched in ["", "no header here\nbody", "exit code x, 1.0s\n"] {
            assert_eq!(normalize_output(untouched), untouched);
        }
    }

    #[tokio::test]
    async fn argv_runs_without_a_shell() {
        let (_tmp, c) = tmp_ctx();
        let r = shell(&c, serde_json::json!({"command": ["echo", "$HOME", "a b"]})).await;
        assert!(r.content.ends_with("\n$HOME a b\n"), "{}", r.content);
    }

    #[tokio::test]
    async fn stderr_is_labelled_and_failure_is_an_error() {
        let (_tmp, c) = tmp_ctx();
        let r = shell(
            &c,
            serde_json::json!({"command": "echo out; echo bad >&2; exit 3"}),
        )
        .await;
        assert_eq!(r.exit_code(), Some(3));
        assert!(r.is_error);
        assert!(r.content.starts_with("exit code 3, "), "{}", r.content);
        assert!(
            r.content.ends_with("s\nout\nstderr:\nbad\n"),
            "{}",
            r.content
        );
    }

    #[tokio::test]
    async fn no_output_is_said() {
        let (_tmp, c) = tmp_ctx();
        let r = shell(&c, serde_json::json!({"command": "true"})).await;
        assert!(r.content.ends_with("(no output)\n"), "{}", r.content);
    }

    #[tokio::test]
    async fn timeout_is_reported_and_capped_by_max() {
        let (_tmp, mut c) = tmp_ctx();
        c.config = Arc::new(ToolConfig {
            max_shell_timeout: Duration::from_millis(200),
            ..ToolConfig::default()
        });
        let r = shell(
            &c,
            serde_json::json!({"command": "sleep 30", "timeout_ms": 60000}),
        )
        .await;
        assert!(r.is_error);
        assert!(
            r.content
                .starts_with("timed out after 0.2s; killed by signal 15 (SIGTERM)"),
            "{}",
            r.content
        );
        // A command stopped at its timeout has no exit code of its own.
        assert_eq!(r.exit_code(), None);
        assert!(r.command.is_some());
    }

    #[tokio::test]
    async fn workdir_is_resolved_and_confined() {
        let (tmp, c) = tmp_ctx();
        std::fs::create_dir(tmp.path().join("sub")).unwrap();
        let r = shell(&c, serde_json::json!({"command": "pwd", "workdir": "sub"})).await;
        assert!(r.content.trim_end().ends_with("/sub"), "{}", r.content);
        let r = shell(&c, serde_json::json!({"command": "pwd", "workdir": ".."})).await;
        assert!(r.is_error);
        assert!(r.content.contains("outside the workspace"), "{}", r.content);
    }

    #[tokio::test]
    async fn long_output_is_capped_with_marker() {
        let (_tmp, c) = tmp_ctx();
        let r = shell(&c, serde_json::json!({"command": "seq 1 100000"})).await;
        let config = ToolConfig::default();
        assert!(r.content.len() < config.max_output_bytes + 200);
        assert!(r.content.contains("\n1\n2\n"), "{}", r.content);
        assert!(r.content.ends_with("\n100000\n"));
        assert!(r.content.contains(" lines omitted ...]"));
    }

    #[tokio::test]
    async fn bad_arguments_run_nothing() {
        let (_tmp, c) = tmp_ctx();
        let r = shell(&c, serde_json::json!({"command": []})).await;
        assert!(r.is_error && r.content.contains("empty"), "{}", r.content);
        let r = shell(&c, serde_json::json!({"cmd": "ls"})).await;
        assert!(
            r.is_error && r.content.contains("invalid arguments"),
            "{}",
            r.content
        );
        let r = shell(&c, serde_json::json!({"command": ["/nonexistent/x"]})).await;
        assert!(
            r.is_error && r.content.contains("cannot start"),
            "{}",
            r.content
        );
    }
}
