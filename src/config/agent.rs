//! `[agent]`: the built-in agent's strategies (plans, a test-driven loop,
//! reflection, finish criteria, context files). The same keys switch them
//! on per agent and per task in task files (`crate::spec::tasks`).

use super::pick;
use crate::agent::effects::reflect::{ReflectConfig, ReflectionPlacement, ReflectionPolicy};
use crate::agent::effects::test_run::{TestRunConfig, DEFAULT_TIMEOUT};
use crate::agent::session::SessionConfig;
use serde::Deserialize;
use std::time::Duration;

/// `[agent]`; every key optional so layers merge.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AgentFile {
    /// Attach the files a prompt names, the README and the build manifest
    /// when no context is given (docs/context.md#context-files).
    pub auto_context: Option<bool>,
    /// The cap on what context files attach to one message, in bytes.
    pub max_context_bytes: Option<usize>,
    /// The `update_plan` tool and `plan` events (docs/plan.md).
    pub enable_plan: Option<bool>,
    /// Run `test_command` when the model is done (docs/test-loop.md).
    pub enable_test_run: Option<bool>,
    pub test_command: Option<String>,
    /// Extra attempts when the test command fails.
    pub test_retries: Option<u32>,
    /// Per attempt.
    pub test_timeout_seconds: Option<u64>,
    /// A critique after each step (docs/reflection.md).
    pub enable_reflect: Option<bool>,
    pub enable_self_diff: Option<bool>,
    pub reflection_policy: Option<ReflectionPolicy>,
    /// Where the latest critique sits in the next request.
    pub reflection_placement: Option<ReflectionPlacement>,
    /// The step limit (model requests per turn); the same limit as
    /// `max_iterations`, which it overrides.
    pub max_steps: Option<u32>,
    /// Writing it in a reply ends the turn (stripped from the answer).
    pub done_token: Option<String>,
}

impl AgentFile {
    /// `over`'s keys win.
    pub fn merge(&mut self, over: AgentFile) {
        pick(&mut self.auto_context, over.auto_context);
        pick(&mut self.max_context_bytes, over.max_context_bytes);
        pick(&mut self.enable_plan, over.enable_plan);
        pick(&mut self.enable_test_run, over.enable_test_run);
        pick(&mut self.test_command, over.test_command);
        pick(&mut self.test_retries, over.test_retries);
        pick(&mut self.test_timeout_seconds, over.test_timeout_seconds);
        pick(&mut self.enable_reflect, over.enable_reflect);
        pick(&mut self.enable_self_diff, over.enable_self_diff);
        pick(&mut self.reflection_policy, over.reflection_policy);
        pick(&mut self.reflection_placement, over.reflection_placement);
        pick(&mut self.max_steps, over.max_steps);
        pick(&mut self.done_token, over.done_token);
    }

    /// Apply the keys that are set to `session`, over what it has (so a
    /// task's keys go over its agent's, and an agent's over the config's).
    /// `at` names the table in errors (`agent`, `agents[0]`, ...).
    pub fn apply(&self, session: &mut SessionConfig, at: &str) -> Result<(), String> {
        if let Some(on) = self.enable_plan {
            session.enable_plan = on;
        }
        if let Some(on) = self.auto_context {
            session.auto_context = on;
        }
        if let Some(n) = self.max_context_bytes {
            if n == 0 {
                return Err(format!("{at}.max_context_bytes: must be at least 1"));
            }
            session.max_context_bytes = n;
        }
        if let Some(n) = self.max_steps {
            if n == 0 {
                return Err(format!("{at}.max_steps: must be at least 1"));
            }
            session.max_iterations = n;
        }
        if let Some(token) = &self.done_token {
            session.done_token = match token.trim() {
                "" => None,
                t => Some(t.to_string()),
            };
        }
        // A test command given here switches the loop on unless it is
        // switched off here.
        let test_on = self
            .enable_test_run
            .or(self.test_command.as_ref().map(|_| true));
        match test_on {
            Some(false) => session.test_run = None,
            Some(true) => {
                let command = self
                    .test_command
                    .clone()
                    .or_else(|| session.test_run.as_ref().map(|t| t.command.clone()))
                    .filter(|c| !c.trim().is_empty())
                    .ok_or_else(|| {
                        format!(
                            "{at}.enable_test_run is on but {at}.test_command is not set; \
                             name the command that runs the tests, e.g. test_command = \"cargo test\""
                        )
                    })?;
                let base = session.test_run.clone();
                session.test_run = Some(TestRunConfig {
                    command,
                    retries: base.as_ref().map_or(0, |t| t.retries),
                    timeout: base.as_ref().map_or(DEFAULT_TIMEOUT, |t| t.timeout),
                });
            }
            None => {}
        }
        if let Some(test_run) = &mut session.test_run {
            if let Some(n) = self.test_retries {
                test_run.retries = n;
            }
            if let Some(secs) = self.test_timeout_seconds {
                if secs == 0 {
                    return Err(format!("{at}.test_timeout_seconds: must be at least 1"));
                }
                test_run.timeout = Duration::from_secs(secs);
            }
        }
        match self.enable_reflect {
            Some(false) => session.reflect = None,
            Some(true) => {
                session.reflect.get_or_insert_with(ReflectConfig::default);
            }
            None => {}
        }
        if let Some(reflect) = &mut session.reflect {
            if let Some(policy) = self.reflection_policy {
                reflect.policy = policy;
            }
            if let Some(on) = self.enable_self_diff {
                reflect.self_diff = on;
            }
            if let Some(placement) = self.reflection_placement {
                reflect.placement = placement;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::provider::{ProviderInfo, WireApi};

    fn session() -> SessionConfig {
        SessionConfig::new(
            ProviderInfo::new("scripted", "", WireApi::Scripted),
            "/tmp".into(),
        )
    }

    #[test]
    fn a_test_command_switches_the_loop_on_and_later_keys_win() {
        let mut s = session();
        let config = AgentFile {
            test_command: Some("cargo test".into()),
            test_retries: Some(2),
            ..Default::default()
        };
        config.apply(&mut s, "agent").unwrap();
        let t = s.test_run.clone().unwrap();
        assert_eq!((t.command.as_str(), t.retries), ("cargo test", 2));
        assert_eq!(t.timeout, DEFAULT_TIMEOUT);
        // A task names another command; retries stay.
        AgentFile {
            test_command: Some("make check".into()),
            ..Default::default()
        }
        .apply(&mut s, "tasks[0]")
        .unwrap();
        let t = s.test_run.clone().unwrap();
        assert_eq!((t.command.as_str(), t.retries), ("make check", 2));
        AgentFile {
            enable_test_run: Some(false),
            ..Default::default()
        }
        .apply(&mut s, "agents[0]")
        .unwrap();
        assert!(s.test_run.is_none());
    }

    #[test]
    fn bad_values_name_the_key() {
        let e = AgentFile {
            enable_test_run: Some(true),
            ..Default::default()
        }
        .apply(&mut session(), "agent")
        .unwrap_err();
        assert!(e.contains("agent.test_command is not set"), "{e}");
        let e = AgentFile {
            max_steps: Some(0),
            ..Default::default()
        }
        .apply(&mut session(), "agents[1]")
        .unwrap_err();
        assert_eq!(e, "agents[1].max_steps: must be at least 1");
    }

    #[test]
    fn reflection_defaults_to_blocking_on_critical_with_the_critique_in_front() {
        let mut s = session();
        AgentFile {
            enable_reflect: Some(true),
            enable_self_diff: Some(true),
            ..Default::default()
        }
        .apply(&mut s, "agent")
        .unwrap();
        assert_eq!(
            s.reflect,
            Some(ReflectConfig {
                policy: ReflectionPolicy::BlockOnCritical,
                self_diff: true,
                placement: ReflectionPlacement::Front,
            })
        );
        AgentFile {
            reflection_placement: Some(ReflectionPlacement::History),
            ..Default::default()
        }
        .apply(&mut s, "agent")
        .unwrap();
        assert_eq!(s.reflect.unwrap().placement, ReflectionPlacement::History);
    }
}
