//! Applying the `[agent]` strategies (`cogni_spec::strategies`) to a
//! session's configuration.

use super::effects::reflect::ReflectConfig;
use super::effects::test_run::{TestRunConfig, DEFAULT_TIMEOUT};
use super::session::SessionConfig;
use cogni_spec::strategies::AgentFile;
use std::time::Duration;

/// Apply the keys of `file` that are set to `session`, over what it has (so a
/// task's keys go over its agent's, and an agent's over the config's).
/// `at` names the table in errors (`agent`, `agents[0]`, ...).
pub fn apply_strategies(
    file: &AgentFile,
    session: &mut SessionConfig,
    at: &str,
) -> Result<(), String> {
    if let Some(on) = file.enable_plan {
        session.enable_plan = on;
    }
    if let Some(on) = file.auto_context {
        session.auto_context = on;
    }
    if let Some(n) = file.max_context_bytes {
        if n == 0 {
            return Err(format!("{at}.max_context_bytes: must be at least 1"));
        }
        session.max_context_bytes = n;
    }
    if let Some(n) = file.max_steps {
        if n == 0 {
            return Err(format!("{at}.max_steps: must be at least 1"));
        }
        session.max_iterations = n;
    }
    if let Some(token) = &file.done_token {
        session.done_token = match token.trim() {
            "" => None,
            t => Some(t.to_string()),
        };
    }
    // A test command given here switches the loop on unless it is
    // switched off here.
    let test_on = file
        .enable_test_run
        .or(file.test_command.as_ref().map(|_| true));
    match test_on {
        Some(false) => session.test_run = None,
        Some(true) => {
            let command = file
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
        if let Some(n) = file.test_retries {
            test_run.retries = n;
        }
        if let Some(secs) = file.test_timeout_seconds {
            if secs == 0 {
                return Err(format!("{at}.test_timeout_seconds: must be at least 1"));
            }
            test_run.timeout = Duration::from_secs(secs);
        }
    }
    match file.enable_reflect {
        Some(false) => session.reflect = None,
        Some(true) => {
            session.reflect.get_or_insert_with(ReflectConfig::default);
        }
        None => {}
    }
    if let Some(reflect) = &mut session.reflect {
        if let Some(policy) = file.reflection_policy {
            reflect.policy = policy;
        }
        if let Some(on) = file.enable_self_diff {
            reflect.self_diff = on;
        }
        if let Some(placement) = file.reflection_placement {
            reflect.placement = placement;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use cogni_spec::strategies::{AgentFile, ReflectionPlacement, ReflectionPolicy};

    /// `file.apply(...)` reads as the tests were written.
    trait Apply {
        fn apply(&self, session: &mut SessionConfig, at: &str) -> Result<(), String>;
    }

    impl Apply for AgentFile {
        fn apply(&self, session: &mut SessionConfig, at: &str) -> Result<(), String> {
            apply_strategies(self, session, at)
        }
    }
    use cogni_provider::{ProviderInfo, WireApi};

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
