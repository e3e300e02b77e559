//! Running the delegation tools: a child session under the parent's
//! policies, budgets carved from the parent's, its events nested in the
//! parent's stream, its answer returned as the call's output.

use super::sink::Nested;
use super::worktree::Worktree;
use super::{Delegation, Isolation, Spawned, DELEGATE, LIST_AGENTS, SPAWN};
use crate::effects::budget::Budget;
use crate::effects::EndReason;
use crate::limits::{StopHandle, TurnLimits};
use crate::session::{start_session_with_provider, Session};
use cogni_process::truncate::head_tail;
use cogni_protocol::{AgentEvent, EventSink, SandboxMode, ToolCall, TurnOutcome, Usage};
use cogni_tools::ToolResult;
use futures::future::BoxFuture;
use futures::StreamExt;
use serde::{Deserialize, Serialize};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Tools bound to the session that owns them: a child gets its own.
const NOT_INHERITED: &[&str] = &["update_plan"];

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Run {
    agent: String,
    task: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Runs {
    runs: Vec<Run>,
}

/// What the parent's model is told about one child.
#[derive(Debug, Serialize)]
struct Report {
    agent: String,
    /// The instance (`reviewer#2`), as events name it.
    #[serde(skip_serializing_if = "String::is_empty")]
    id: String,
    outcome: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    answer: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    reason: Option<String>,
    tokens: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    cost_usd: Option<f64>,
    /// With `isolation = "worktree"`: what it changed, as a git diff.
    #[serde(skip_serializing_if = "Option::is_none")]
    diff: Option<String>,
    /// Where the whole diff is (`git apply PATH` applies it).
    #[serde(skip_serializing_if = "Option::is_none")]
    diff_file: Option<String>,
}

impl Report {
    fn refused(agent: &str, error: String) -> Self {
        Report {
            agent: agent.to_string(),
            id: String::new(),
            outcome: "error".into(),
            answer: String::new(),
            error: Some(error),
            reason: None,
            tokens: 0,
            cost_usd: None,
            diff: None,
            diff_file: None,
        }
    }

    fn failed(&self) -> bool {
        self.outcome != "done"
    }
}

/// Stops the children of one `spawn_agents` call once one fails.
#[derive(Default)]
struct Siblings {
    cancelled: AtomicBool,
    stops: Mutex<Vec<StopHandle>>,
}

impl Siblings {
    fn cancel(&self) {
        self.cancelled.store(true, Ordering::SeqCst);
        if let Ok(stops) = self.stops.lock() {
            for stop in stops.iter() {
                stop.close();
            }
        }
    }

    fn cancelled(&self) -> bool {
        self.cancelled.load(Ordering::SeqCst)
    }
}

impl Session {
    /// Run a delegation tool call; its output is JSON for the model.
    pub(crate) fn delegate<'a>(
        &'a self,
        call: &'a ToolCall,
        sink: &'a dyn EventSink,
    ) -> BoxFuture<'a, ToolResult> {
        Box::pin(async move {
            let Some(delegation) = self.conversation.delegation.clone() else {
                return ToolResult::error(format!("`{}` is not available here", call.name));
            };
            let raw = if call.arguments.trim().is_empty() {
                "{}"
            } else {
                &call.arguments
            };
            let result = match call.name.as_str() {
                LIST_AGENTS => {
                    let agents: Vec<serde_json::Value> = delegation
                        .tree
                        .registry
                        .list(&self.agent)
                        .into_iter()
                        .map(|a| serde_json::json!({"name": a.name, "description": a.description}))
                        .collect();
                    return ToolResult::ok(serde_json::Value::from(agents).to_string());
                }
                DELEGATE => match serde_json::from_str::<Run>(raw) {
                    Ok(run) => {
                        let report = self
                            .run_child(&delegation, &run, 1, &call.id, sink, None)
                            .await;
                        (report.failed(), serde_json::to_string(&report))
                    }
                    Err(e) => return bad_arguments(DELEGATE, e),
                },
                SPAWN => match serde_json::from_str::<Runs>(raw) {
                    Ok(Runs { runs }) if runs.is_empty() => {
                        return ToolResult::error(
                            "`runs` is empty: give at least one {agent, task}",
                        )
                    }
                    Ok(Runs { runs }) => {
                        let reports = self.run_children(&delegation, &runs, &call.id, sink).await;
                        (
                            reports.iter().any(Report::failed),
                            serde_json::to_string(&reports),
                        )
                    }
                    Err(e) => return bad_arguments(SPAWN, e),
                },
                other => return ToolResult::error(format!("`{other}` is not a delegation tool")),
            };
            match result {
                (failed, Ok(text)) => ToolResult {
                    content: text,
                    is_error: failed,
                    ..Default::default()
                },
                (_, Err(e)) => ToolResult::error(format!("cannot encode the result: {e}")),
            }
        })
    }

    /// `spawn_agents`: at most `max_concurrent` at once, results in order;
    /// the first failure stops the others (their calls still get outputs,
    /// as after an interrupt), and those not yet started never start.
    async fn run_children(
        &self,
        delegation: &Delegation,
        runs: &[Run],
        call_id: &str,
        sink: &dyn EventSink,
    ) -> Vec<Report> {
        let siblings = Siblings::default();
        let share = runs.len().min(delegation.max_concurrent as usize) as u32;
        let mut children: Vec<BoxFuture<'_, Report>> = Vec::with_capacity(runs.len());
        for run in runs {
            children.push(Box::pin(
                self.run_sibling(delegation, run, share, call_id, sink, &siblings),
            ));
        }
        futures::stream::iter(children)
            .buffered(delegation.max_concurrent as usize)
            .collect()
            .await
    }

    /// One child of `spawn_agents`: not started once a sibling failed; its
    /// own failure stops the others.
    async fn run_sibling(
        &self,
        delegation: &Delegation,
        run: &Run,
        share: u32,
        call_id: &str,
        sink: &dyn EventSink,
        siblings: &Siblings,
    ) -> Report {
        if siblings.cancelled() {
            return Report::refused(
                &run.agent,
                "not started: another agent of this call failed".into(),
            );
        }
        let report = self
            .run_child(delegation, run, share, call_id, sink, Some(siblings))
            .await;
        if report.failed() && !siblings.cancelled() {
            siblings.cancel();
        }
        report
    }

    /// Start `run.agent` on `run.task` and wait for its answer. `share`:
    /// how many run at once, each getting that share of the parent's
    /// remaining budgets.
    async fn run_child(
        &self,
        delegation: &Delegation,
        run: &Run,
        share: u32,
        call_id: &str,
        sink: &dyn EventSink,
        siblings: Option<&Siblings>,
    ) -> Report {
        let spawned = match self.spawn_child(delegation, &run.agent) {
            Ok(spawned) => spawned,
            Err(e) => return Report::refused(&run.agent, e),
        };
        let n = delegation.tree.spawned.load(Ordering::SeqCst);
        let id = format!("{}#{n}", run.agent);
        let mut path = delegation.path.clone();
        path.push(id.clone());
        let started = Instant::now();
        let emit_finish =
            |outcome: &str, usage: Usage, cost: Option<f64>, error: Option<String>| {
                sink.emit(AgentEvent::SubagentFinished {
                    agent: path.clone(),
                    call_id: call_id.to_string(),
                    outcome: outcome.to_string(),
                    usage,
                    cost_usd: cost,
                    duration_ms: started.elapsed().as_millis() as u64,
                    error,
                });
            };
        sink.emit(AgentEvent::SubagentStarted {
            agent: path.clone(),
            call_id: call_id.to_string(),
            task: run.task.clone(),
        });
        let isolation = spawned.options.isolation;
        let worktree = match isolation {
            Isolation::Worktree => match Worktree::create(&self.ctx.cwd, &id).await {
                Ok(w) => Some(w),
                Err(e) => {
                    emit_finish("error", Usage::default(), None, Some(e.clone()));
                    return Report::refused(&run.agent, e);
                }
            },
            Isolation::None => None,
        };
        let mut child = match self.start_child(
            delegation,
            spawned,
            &path,
            share,
            worktree.as_ref().map(|w| w.cwd.clone()),
        ) {
            Ok(child) => child,
            Err(e) => {
                if let Some(w) = worktree {
                    w.remove().await;
                }
                emit_finish("error", Usage::default(), None, Some(e.clone()));
                return Report::refused(&run.agent, e);
            }
        };
        if let Some(siblings) = siblings {
            if let Ok(mut stops) = siblings.stops.lock() {
                stops.push(child.stop_handle());
            }
            if siblings.cancelled() {
                child.stop_handle().close();
            }
        }
        let nested = Nested {
            parent: sink,
            agent: path.clone(),
            call_id: call_id.to_string(),
        };
        let result = child.run_turn(&run.task, &nested).await;
        child.end(EndReason::after(&result), &nested).await;
        let snapshot = child.metrics().snapshot();
        let (usage, cost) = (snapshot.session.usage, snapshot.session.cost_usd);
        let (diff, diff_file) = match worktree {
            Some(w) => match w.finish().await {
                Ok(d) => d,
                Err(e) => (Some(format!("(the diff could not be taken: {e})")), None),
            },
            None => (None, None),
        };
        let limits = self.toolset.shared.config.output_limits();
        let report = match result {
            Ok(turn) => Report {
                agent: run.agent.clone(),
                id,
                outcome: outcome_name(turn.outcome),
                answer: head_tail(&turn.final_text, limits),
                error: None,
                reason: turn.reason,
                tokens: usage.total(),
                cost_usd: cost,
                diff: diff.map(|d| head_tail(&d, limits)),
                diff_file,
            },
            Err(e) => Report {
                error: Some(e.to_string()),
                id,
                tokens: usage.total(),
                cost_usd: cost,
                diff,
                diff_file,
                ..Report::refused(&run.agent, String::new())
            },
        };
        emit_finish(&report.outcome, usage, cost, report.error.clone());
        report
    }

    /// The guards, then a fresh agent from the registry.
    fn spawn_child(&self, delegation: &Delegation, name: &str) -> Result<Spawned, String> {
        if name == self.agent {
            return Err(format!(
                "`{name}` cannot delegate to itself; list_agents names the others"
            ));
        }
        let depth = delegation.depth + 1;
        if depth > delegation.max_depth {
            return Err(format!(
                "delegation is {} levels deep at most (max_delegation_depth); do this task yourself",
                delegation.max_depth
            ));
        }
        let tree = &delegation.tree;
        // Only an agent that exists counts against the session's budget.
        let spawned = tree.registry.spawn(name, depth)?;
        let n = tree.spawned.fetch_add(1, Ordering::SeqCst) + 1;
        if n > tree.limits.max_agents {
            tree.spawned.fetch_sub(1, Ordering::SeqCst);
            return Err(format!(
                "this session has started {} agents, the most it may (max_agents_per_session)",
                tree.limits.max_agents
            ));
        }
        Ok(spawned)
    }

    /// The child's session: the parent's sandbox (or a stricter one),
    /// approval policy, approver and working directory; its own tools,
    /// then the parent's; budgets carved from the parent's.
    fn start_child(
        &self,
        delegation: &Delegation,
        spawned: Spawned,
        path: &[String],
        share: u32,
        cwd: Option<std::path::PathBuf>,
    ) -> Result<Session, String> {
        let Spawned {
            mut config,
            options,
            depth,
        } = spawned;
        let name = config.agent.clone();
        let parent_sandbox = &self.ctx.sandbox_policy;
        let stricter = rank(config.sandbox_policy.mode) < rank(parent_sandbox.mode);
        let mode = if stricter {
            config.sandbox_policy.mode
        } else {
            parent_sandbox.mode
        };
        config.sandbox_policy = parent_sandbox.clone();
        config.sandbox_policy.mode = mode;
        config.approval_policy = self.ctx.approval_policy;
        config.cwd = cwd.unwrap_or_else(|| self.ctx.cwd.clone());
        // In the same directory, the parent's roots: resolved once.
        config.workspace = Some(self.toolset.shared.workspace.clone());
        config.output_schema = None;
        config.verbose = self.ctx.verbose;
        config.delegated = true;
        // The same provider: its client (and a script's place) is shared.
        let provider = if config.provider.id == self.wire.id() {
            self.wire.clone()
        } else {
            crate::create_provider(&config).map_err(|e| format!("agent `{name}`: {e}"))?
        };
        let mut child = start_session_with_provider(config, provider)
            .map_err(|e| format!("agent `{name}`: {e}"))?;
        child.conversation.approver = self.conversation.approver.clone();
        child.conversation.questions = self.conversation.questions.clone();
        child
            .set_limits(self.carve(&child, share))
            .map_err(|e| format!("agent `{name}`: {e}"))?;
        let mut tools = child.toolset.registry.clone();
        tools.retain(|n| !options.disallowed.iter().any(|d| d == n));
        let inherits = |name: &str| {
            options.inherit.allows(name)
                && !NOT_INHERITED.contains(&name)
                && !options.disallowed.iter().any(|d| d == name)
        };
        for (spec, tool) in self.toolset.registry.entries() {
            if inherits(&spec.name) && tools.spec(&spec.name).is_none() {
                tools.register(tool.clone());
            }
        }
        // Held-back (MCP) tools: held back in the child too, for its own
        // search_tools.
        for (group, tool) in self.toolset.registry.deferred_entries() {
            if inherits(&tool.spec().name) {
                tools.register_deferred(group, tool.clone());
            }
        }
        child
            .meter
            .metrics
            .attach(path.join("/"), self.meter.metrics.ledger().child());
        let lower = |own: Option<u32>, inherited: u32| own.map_or(inherited, |o| o.min(inherited));
        child.conversation.delegation = Some(Delegation {
            tree: delegation.tree.clone(),
            depth,
            path: path.to_vec(),
            max_depth: lower(options.max_delegation_depth, delegation.max_depth),
            max_concurrent: lower(options.max_concurrent_agents, delegation.max_concurrent).max(1),
        });
        child.set_tools(tools);
        Ok(child)
    }

    /// The child's budgets: what the parent has left of each, divided by
    /// `share` (time is not divided: siblings run at once), or the child's
    /// own where those are lower.
    fn carve(&self, child: &Session, share: u32) -> TurnLimits {
        let share = share.max(1);
        let metrics = &self.meter.metrics;
        let turn = metrics.snapshot().turn;
        let left = self
            .extensions
            .effects
            .budgets()
            .into_iter()
            .map(|b| match b {
                Budget::Tokens(max) => Budget::Tokens(
                    max.saturating_sub(metrics.turn_usage().total()) / u64::from(share),
                ),
                Budget::CostUsd(max) => Budget::CostUsd(
                    (max - metrics.turn_cost().unwrap_or(max)).max(0.0) / f64::from(share),
                ),
                Budget::Time(max) => {
                    Budget::Time(max.saturating_sub(Duration::from_millis(turn.wall_ms)))
                }
                Budget::Steps(max) => {
                    Budget::Steps(max.saturating_sub(turn.model_requests) / share)
                }
                Budget::ToolCalls(max) => {
                    Budget::ToolCalls(max.saturating_sub(turn.tool_calls()) / share)
                }
            });
        let mut limits = TurnLimits::default();
        for budget in left.chain(child.extensions.effects.budgets()) {
            tighten(&mut limits, budget);
        }
        limits
    }
}

/// `limits` with `budget` where it is lower.
fn tighten(limits: &mut TurnLimits, budget: Budget) {
    fn min<T: PartialOrd + Copy>(slot: &mut Option<T>, value: T) {
        *slot = Some(match *slot {
            Some(now) if now < value => now,
            _ => value,
        });
    }
    match budget {
        Budget::Tokens(n) => min(&mut limits.max_tokens, n),
        Budget::CostUsd(n) => min(&mut limits.max_cost_usd, n),
        Budget::Time(n) => min(&mut limits.max_duration, n),
        Budget::Steps(n) => min(&mut limits.max_steps, n),
        Budget::ToolCalls(n) => min(&mut limits.max_tool_calls, n),
    }
}

fn rank(mode: SandboxMode) -> u8 {
    match mode {
        SandboxMode::ReadOnly => 0,
        SandboxMode::WorkspaceWrite => 1,
        SandboxMode::DangerFullAccess => 2,
    }
}

fn outcome_name(outcome: TurnOutcome) -> String {
    serde_json::to_value(&outcome)
        .ok()
        .and_then(|v| v.as_str().map(str::to_string))
        .unwrap_or_else(|| format!("{outcome:?}"))
}

fn bad_arguments(tool: &str, e: serde_json::Error) -> ToolResult {
    ToolResult::error(format!(
        "arguments to `{tool}` do not match its schema ({e}); nothing was run"
    ))
}
