//! `effects = [...]` and `[run]` (middleware) in cogni.toml.

use super::{err, ConfigError};
use cogni_core::output::OutputSchema;
use cogni_core::run::{OutputGuardrail, RunConfig};
use cogni_protocol::layer::AddUp;
use cogni_spec::effects::EffectSpec;
use cogni_tools::fs::{read_text_limited, SPEC_FILE_MAX_BYTES};
use serde::Deserialize;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

/// Default timeout of an output guardrail's command.
const CHECK_TIMEOUT: Duration = Duration::from_secs(60);

cogni_protocol::layered! {
    /// `[run]`
    #[derive(Debug, Clone, Default, Deserialize)]
    pub struct RunFile {
        /// The longest one run (`cogni run`, a REPL message, a task attempt) may take.
        pub timeout_secs: Option<f64>,
        /// `[run.output_guardrail]`: what the final answer must satisfy. One
        /// per file; merged layers keep each one, so a later layer adds a
        /// check and never removes an earlier one.
        #[serde(default, rename = "output_guardrail", deserialize_with = "one")]
        pub output_guardrails: AddUp<OutputGuardrailFile>,
    }
}

/// A file's one `[run.output_guardrail]` table.
fn one<'de, D: serde::Deserializer<'de>>(d: D) -> Result<AddUp<OutputGuardrailFile>, D::Error> {
    OutputGuardrailFile::deserialize(d).map(|g| AddUp(vec![g]))
}

/// `[run.output_guardrail]`
#[derive(Debug, Clone, Default, Deserialize)]
pub struct OutputGuardrailFile {
    /// A JSON Schema the answer must be valid against (JSON, or in a ```json fence).
    pub schema_file: Option<PathBuf>,
    /// A regex the answer must match.
    pub regex: Option<String>,
    /// A command that gets `{"answer": ...}` on stdin; exit 0 accepts.
    pub command: Option<String>,
    pub timeout_ms: Option<u64>,
}

impl RunFile {
    /// Relative paths are relative to the file's directory.
    pub(super) fn resolve_paths(&mut self, dir: &Path) {
        for p in self
            .output_guardrails
            .0
            .iter_mut()
            .filter_map(|g| g.schema_file.as_mut())
        {
            if p.is_relative() {
                *p = dir.join(&*p);
            }
        }
    }
}

/// Check a file's `effects` entries; errors name the file and the key path.
pub(super) fn check_effects(path: &Path, effects: &[toml::Value]) -> Result<(), ConfigError> {
    EffectSpec::parse_all(effects, "effects")
        .map(|_| ())
        .map_err(|e| ConfigError(format!("{}: {e}", path.display())))
}

/// The effects of the merged config: every layer's, a limit set by more
/// than one layer at its tightest.
pub(super) fn effects(values: Option<Vec<toml::Value>>) -> Result<Vec<EffectSpec>, ConfigError> {
    EffectSpec::parse_all(&values.unwrap_or_default(), "effects")
        .map(EffectSpec::combine_layers)
        .map_err(ConfigError)
}

/// The middleware settings of the merged config.
pub(super) fn run_config(file: Option<RunFile>) -> Result<RunConfig, ConfigError> {
    let file = file.unwrap_or_default();
    let timeout = match file.timeout_secs {
        None => None,
        Some(s) if s.is_finite() && s > 0.0 => Some(Duration::from_secs_f64(s)),
        Some(s) => return err(format!("run.timeout_secs must be greater than 0, got {s}")),
    };
    let output_guardrails = file
        .output_guardrails
        .0
        .into_iter()
        .map(output_guardrail)
        .collect::<Result<_, _>>()?;
    // Checkpoints are the front door's choice (`Config::checkpoints`).
    Ok(RunConfig {
        timeout,
        output_guardrails,
        checkpoints: None,
    })
}

fn output_guardrail(g: OutputGuardrailFile) -> Result<OutputGuardrail, ConfigError> {
    let key = "run.output_guardrail";
    if g.schema_file.is_none() && g.regex.is_none() && g.command.is_none() {
        return err(format!(
            "{key}: set `schema_file`, `regex` or `command` (what the final answer must satisfy)"
        ));
    }
    let schema = match &g.schema_file {
        None => None,
        Some(path) => {
            let text = read_text_limited(path, SPEC_FILE_MAX_BYTES)
                .map_err(|e| ConfigError(format!("{key}.schema_file: {e}")))?;
            let value: serde_json::Value = serde_json::from_str(&text).map_err(|e| {
                ConfigError(format!(
                    "{key}.schema_file {}: not JSON: {e}",
                    path.display()
                ))
            })?;
            Some(Arc::new(OutputSchema::compile(&value).map_err(|e| {
                ConfigError(format!("{key}.schema_file {}: {e}", path.display()))
            })?))
        }
    };
    let regex = match &g.regex {
        None => None,
        Some(re) => Some(
            regex::Regex::new(re)
                .map_err(|e| ConfigError(format!("{key}.regex: not a valid regex: {e}")))?,
        ),
    };
    if g.command.as_deref().is_some_and(|c| c.trim().is_empty()) {
        return err(format!("{key}.command: is empty"));
    }
    if g.timeout_ms == Some(0) {
        return err(format!("{key}.timeout_ms must be greater than 0"));
    }
    Ok(OutputGuardrail {
        schema,
        regex,
        command: g.command,
        timeout: g.timeout_ms.map_or(CHECK_TIMEOUT, Duration::from_millis),
    })
}
