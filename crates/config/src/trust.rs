//! Trust: a repository's own `cogni.toml` is somebody else's file until the
//! user says otherwise. Before that, only the keys of the allowlist apply
//! (`super::allowlist`); everything else is ignored with a warning.
//!
//! A directory is trusted when its canonical path, or one of its parents,
//! is in `$COGNI_HOME/trusted.toml` (`cogni trust`) or in `trusted_projects`
//! of the user's `$COGNI_HOME/config.toml`.

use super::{ConfigError, ConfigFile};
use cogni_tools::fs::{read_text_limited, SPEC_FILE_MAX_BYTES};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

const FILE_NAME: &str = "trusted.toml";

/// `$COGNI_HOME/trusted.toml`.
#[derive(Debug)]
pub struct TrustStore {
    path: PathBuf,
    file: TrustFile,
}

#[derive(Debug, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct TrustFile {
    #[serde(default)]
    trusted: Vec<PathBuf>,
}

impl TrustStore {
    /// Read `home/trusted.toml`; a missing file is an empty store.
    pub fn load(home: &Path) -> Result<Self, ConfigError> {
        let path = home.join(FILE_NAME);
        let file = match read_text_limited(&path, SPEC_FILE_MAX_BYTES) {
            Ok(text) => toml::from_str(&text).map_err(|e| {
                ConfigError(format!(
                    "{}: {}",
                    path.display(),
                    cogni_spec::plain_message(e.message())
                ))
            })?,
            Err(e) if e.is_missing() => TrustFile::default(),
            Err(e) => return Err(ConfigError(e.to_string())),
        };
        Ok(TrustStore { path, file })
    }

    /// The trusted directories as recorded (canonical when recorded).
    pub fn dirs(&self) -> &[PathBuf] {
        &self.file.trusted
    }

    /// Record `dir` (canonical).
    pub fn trust(&mut self, dir: PathBuf) {
        if !self.file.trusted.contains(&dir) {
            self.file.trusted.push(dir);
            self.file.trusted.sort();
        }
    }

    /// Forget `dir`; false when it was not recorded.
    pub fn revoke(&mut self, dir: &Path) -> bool {
        let before = self.file.trusted.len();
        self.file.trusted.retain(|d| d != dir);
        self.file.trusted.len() != before
    }

    /// Write the store back atomically, creating `$COGNI_HOME` if need be.
    pub fn save(&self) -> Result<(), ConfigError> {
        let fail = |e: &dyn std::fmt::Display| ConfigError(format!("{}: {e}", self.path.display()));
        if let Some(dir) = self.path.parent() {
            std::fs::create_dir_all(dir).map_err(|e| fail(&e))?;
        }
        let text = toml::to_string(&self.file).map_err(|e| fail(&e))?;
        cogni_tools::fs::write_atomic(&self.path, text.as_bytes()).map_err(|e| fail(&e))?;
        Ok(())
    }
}

/// The directories the user trusts: the store's and the user config's
/// `trusted_projects`, canonical.
pub(super) struct Trusted(Vec<PathBuf>);

impl Trusted {
    pub(super) fn load(home: &Path, trusted_projects: &[PathBuf]) -> Result<Self, ConfigError> {
        let store = TrustStore::load(home)?;
        let listed = store.dirs().iter().chain(trusted_projects);
        Ok(Trusted(
            listed
                .filter_map(|d| cogni_sandbox::sys::canonicalize(d).ok())
                .collect(),
        ))
    }

    /// Whether `dir` is one of them or inside one (false when it does not
    /// exist).
    pub(super) fn covers(&self, dir: &Path) -> bool {
        cogni_sandbox::sys::canonicalize(dir)
            .is_ok_and(|dir| self.0.iter().any(|d| dir.starts_with(d)))
    }
}

/// Whether `cwd` is trusted by the store or by the user config's
/// `trusted_projects`.
pub(super) fn is_trusted(home: &Path, user: &ConfigFile, cwd: &Path) -> Result<bool, ConfigError> {
    let projects = user.trusted_projects.as_deref().unwrap_or_default();
    Ok(Trusted::load(home, projects)?.covers(cwd))
}

/// Whether `dir` is trusted, by the store or by `trusted_projects` of
/// `home/config.toml` (read when it exists), as a session in `dir` would
/// find (`cogni import` asks before it writes a project's cogni.toml).
pub fn dir_is_trusted(home: &Path, dir: &Path) -> Result<bool, ConfigError> {
    is_trusted(home, &super::load::user_layer(home)?, dir)
}

/// Drop from a project layer, trusted or not, what only the user's own
/// files and the command line may set: which directories are trusted, and
/// the scripted provider and its script (a script plays the model, and
/// its tool calls run). Returns the dropped keys, by path.
pub(super) fn project_only(project: &mut ConfigFile) -> Vec<String> {
    let mut dropped = Vec::new();
    if project.trusted_projects.take().is_some() {
        dropped.push("trusted_projects".to_string());
    }
    if project.provider.as_deref() == Some("scripted") {
        project.provider = None;
        dropped.push("provider = \"scripted\"".to_string());
    }
    for (id, p) in project.model_providers.iter_mut() {
        if p.script.take().is_some() {
            dropped.push(format!("model_providers.{id}.script"));
        }
        if p.wire_api == Some(cogni_provider::WireApi::Scripted) {
            p.wire_api = None;
            dropped.push(format!("model_providers.{id}.wire_api = \"scripted\""));
        }
    }
    dropped
}

/// The warning for the keys an untrusted project file lost.
pub(super) fn warning(file: &Path, dropped: &[String]) -> String {
    format!(
        "{}: this directory is not trusted, so its cogni.toml may set only the keys on the allowlist \
         (`cogni trust --allowlist` lists them); ignored: {}. Run `cogni trust` here if you trust it.",
        file.display(),
        dropped.join(", ")
    )
}

/// The warning for what a trusted project file may not set either.
pub(super) fn project_warning(file: &Path, dropped: &[String]) -> String {
    format!(
        "{}: only your own config ($COGNI_HOME/config.toml, --config) and the command line may set \
         these; ignored: {}",
        file.display(),
        dropped.join(", ")
    )
}
