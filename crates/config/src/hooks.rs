//! `[[hooks.EVENT]]` in a config layer. Layers add up: the user's hooks
//! (`$COGNI_HOME/config.toml`), then a trusted project's, then those of
//! `--config`, each in file order. An untrusted project's hooks are
//! dropped with the other keys it may not set (see trust.rs).

use cogni_spec::hooks::{self as spec, HookSpec};
use serde::{Deserialize, Deserializer};

/// The hooks of one layer, checked when the file is read (an error names
/// the key path: `hooks.PreToolUse[0].matcher: not a valid regex`).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct HooksFile(pub Vec<HookSpec>);

impl<'de> Deserialize<'de> for HooksFile {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let value = toml::Value::deserialize(deserializer)?;
        spec::parse(&value, "hooks")
            .map(HooksFile)
            .map_err(serde::de::Error::custom)
    }
}

/// Hooks add up: `over`'s run after these.
impl cogni_protocol::layer::Merge for HooksFile {
    fn merge(&mut self, over: HooksFile) {
        self.0.extend(over.0);
    }
}

impl HooksFile {
    /// The key paths of the events it has hooks for (`hooks.PreToolUse`).
    pub fn keys(&self) -> Vec<String> {
        let mut keys: Vec<String> = self
            .0
            .iter()
            .map(|h| format!("hooks.{}", h.event.name()))
            .collect();
        keys.dedup();
        keys
    }
}
