//! The environment of processes that tools start.
//!
//! Steps, in order: take the inherited variables (`inherit`), drop those
//! that look secret by name or by value unless `ignore_default_excludes`,
//! always drop cogni's own provider keys, drop `exclude` matches, keep only
//! `include_only` matches (when given), then add `set` (explicit values
//! always win). Patterns are globs matched case-insensitively against the
//! whole name.
//!
//! A variable looks secret when (case-insensitively)
//! - its name contains KEY, SECRET, TOKEN, PASSWORD or PASSWD;
//! - or its name has two words or more (split at `_`, `-` and `.`) and the
//!   last is one of `SECRET_LAST_WORDS` (`GH_PAT`, `MYSQL_PWD`,
//!   `NPM_CONFIG__AUTH`, `AWS_SESSION_CREDS`); `PWD` and `OLDPWD` (the
//!   shell's directories) are one word, and in `SSH_AUTH_SOCK` the last
//!   word names a socket;
//! - or its value holds a secret that [`cogni_sandbox::redact`] knows
//!   (`DATABASE_URL=postgres://u:pw@host/db`, a `ghp_...` token, a PEM
//!   private key, ...).

use globset::{GlobBuilder, GlobSet, GlobSetBuilder};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Which variables of cogni's own environment children start from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum EnvInherit {
    /// Every variable (`all`, the default).
    #[default]
    All,
    /// Only [`CORE_VARS`] and `LC_*`.
    Core,
    /// No variable: children get only what `set` gives them (`none`).
    None,
}

/// The `[tools.shell_env]` policy.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ShellEnvPolicy {
    /// `inherit`: which of cogni's variables children start from.
    pub inherit: EnvInherit,
    /// Keep variables that look secret by name or value (see the module's
    /// documentation); provider keys are dropped all the same.
    pub ignore_default_excludes: bool,
    /// `exclude`: globs (case-insensitive, whole name) of variables to drop.
    pub exclude: Vec<String>,
    /// `include_only`: when not empty, globs of the only variables kept.
    pub include_only: Vec<String>,
    /// `set`: variables set to these values, after every filter.
    pub set: BTreeMap<String, String>,
}

// `[tools] shell_env`: a later config layer's policy replaces it whole.
cogni_protocol::replaced_whole!(ShellEnvPolicy);

/// Variables kept by `inherit = "core"` (besides `LC_*`).
pub const CORE_VARS: &[&str] = &[
    "HOME", "LANG", "LANGUAGE", "LOGNAME", "PATH", "SHELL", "TEMP", "TERM", "TMP", "TMPDIR", "TZ",
    "USER",
];

/// Name fragments that mark a variable as secret (case-insensitive).
const SECRET_WORDS: &[&str] = &["KEY", "SECRET", "TOKEN", "PASSWORD", "PASSWD"];

/// Last words of a name of two words or more that mark it as secret
/// (case-insensitive): `GH_PAT`, `MYSQL_PWD`, `DB_PASS`, `NPM_CONFIG__AUTH`,
/// `AWS_SESSION_CREDS`, `SESSION_COOKIE`.
const SECRET_LAST_WORDS: &[&str] = &[
    "PAT",
    "PWD",
    "PASS",
    "AUTH",
    "CREDS",
    "CREDENTIAL",
    "CREDENTIALS",
    "COOKIE",
];

/// Provider credentials cogni reads itself. Never passed to children, even
/// with `ignore_default_excludes`, unless named in `set`.
pub const PROVIDER_KEY_VARS: &[&str] = &[
    "ANTHROPIC_API_KEY",
    "AZURE_OPENAI_API_KEY",
    "COGNI_API_KEY",
    "DEEPSEEK_API_KEY",
    "GEMINI_API_KEY",
    "GOOGLE_API_KEY",
    "GROQ_API_KEY",
    "MISTRAL_API_KEY",
    "OPENAI_API_KEY",
    "OPENROUTER_API_KEY",
    "XAI_API_KEY",
];

/// A glob of `exclude` or `include_only` that does not compile.
#[derive(Debug, thiserror::Error)]
#[error("invalid pattern `{pattern}` in the shell environment policy: {source}")]
pub struct EnvPolicyError {
    pattern: String,
    source: globset::Error,
}

impl ShellEnvPolicy {
    /// Check the patterns, so a bad config fails before any tool runs.
    pub fn validate(&self) -> Result<(), EnvPolicyError> {
        compile(&self.exclude)?;
        compile(&self.include_only)?;
        Ok(())
    }

    /// The environment for a child, from cogni's own environment. Variables
    /// whose name or value is not UTF-8 are left out.
    pub fn child_env(&self) -> Result<BTreeMap<String, String>, EnvPolicyError> {
        let vars = std::env::vars_os()
            .filter_map(|(k, v)| Some((k.into_string().ok()?, v.into_string().ok()?)));
        self.apply(vars)
    }

    /// The environment for a child, from `vars`.
    pub fn apply(
        &self,
        vars: impl IntoIterator<Item = (String, String)>,
    ) -> Result<BTreeMap<String, String>, EnvPolicyError> {
        let exclude = compile(&self.exclude)?;
        let include_only = compile(&self.include_only)?;
        let mut env: BTreeMap<String, String> = vars
            .into_iter()
            .filter(|(name, _)| match self.inherit {
                EnvInherit::All => true,
                EnvInherit::Core => is_core(name),
                EnvInherit::None => false,
            })
            .filter(|(name, value)| self.ignore_default_excludes || !looks_secret(name, value))
            .filter(|(name, _)| !PROVIDER_KEY_VARS.contains(&name.as_str()))
            .filter(|(name, _)| !exclude.is_match(name))
            .filter(|(name, _)| self.include_only.is_empty() || include_only.is_match(name))
            .collect();
        env.extend(self.set.iter().map(|(k, v)| (k.clone(), v.clone())));
        Ok(env)
    }
}

/// Variables a Windows program needs to start and find things, also kept
/// by `inherit = "core"` there (names compared without case, as Windows
/// does).
pub const WINDOWS_CORE_VARS: &[&str] = &[
    "APPDATA",
    "COMSPEC",
    "LOCALAPPDATA",
    "PATHEXT",
    "PROGRAMDATA",
    "PROGRAMFILES",
    "SYSTEMDRIVE",
    "SYSTEMROOT",
    "USERNAME",
    "USERPROFILE",
    "WINDIR",
];

fn is_core(name: &str) -> bool {
    // Windows' names are the same whatever their case.
    let name: std::borrow::Cow<str> = if cfg!(windows) {
        name.to_ascii_uppercase().into()
    } else {
        name.into()
    };
    CORE_VARS.contains(&&*name)
        || name.starts_with("LC_")
        || (cfg!(windows) && WINDOWS_CORE_VARS.contains(&&*name))
}

/// Whether a variable looks secret by its name or its value (see the
/// module's documentation).
pub fn looks_secret(name: &str, value: &str) -> bool {
    let upper = name.to_ascii_uppercase();
    if SECRET_WORDS.iter().any(|word| upper.contains(word)) {
        return true;
    }
    let words: Vec<&str> = upper
        .split(['_', '-', '.'])
        .filter(|w| !w.is_empty())
        .collect();
    if let [_, .., last] = words[..] {
        if SECRET_LAST_WORDS.contains(&last) {
            return true;
        }
    }
    cogni_sandbox::redact::redact(value) != value
}

fn compile(patterns: &[String]) -> Result<GlobSet, EnvPolicyError> {
    let mut set = GlobSetBuilder::new();
    for pattern in patterns {
        let glob = GlobBuilder::new(pattern)
            .case_insensitive(true)
            .build()
            .map_err(|source| EnvPolicyError {
                pattern: pattern.clone(),
                source,
            })?;
        set.add(glob);
    }
    set.build().map_err(|source| EnvPolicyError {
        pattern: patterns.join(", "),
        source,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vars() -> Vec<(String, String)> {
        [
            ("PATH", "/bin"),
            ("HOME", "/home/u"),
            ("LC_ALL", "C"),
            ("FOO_API_KEY", "k"),
            ("my_token", "t"),
            ("DB_PASSWORD", "p"),
            ("AWS_SECRET_ACCESS_KEY", "s"),
            ("OPENAI_API_KEY", "sk"),
            ("EDITOR", "vi"),
            ("CARGO_HOME", "/c"),
        ]
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
    }

    fn names(env: &BTreeMap<String, String>) -> Vec<&str> {
        env.keys().map(String::as_str).collect()
    }

    #[test]
    fn default_inherits_all_but_secrets() {
        let env = ShellEnvPolicy::default().apply(vars()).unwrap();
        assert_eq!(
            names(&env),
            ["CARGO_HOME", "EDITOR", "HOME", "LC_ALL", "PATH"]
        );
    }

    #[test]
    fn names_and_values_that_look_secret_are_dropped() {
        let dropped = [
            ("GH_PAT", "x"),
            ("MYSQL_PWD", "x"),
            ("DB_PASS", "x"),
            ("DB_PASSWD", "x"),
            ("NPM_CONFIG__AUTH", "x"),
            ("npm_config__auth", "x"),
            ("AWS_SESSION_CREDS", "x"),
            ("GOOGLE_APPLICATION_CREDENTIALS", "/home/u/key.json"),
            ("SESSION_COOKIE", "x"),
            ("DATABASE_URL", "postgres://u:pw@host/db"),
            ("HTTPS_PROXY", "http://me:hunter2@proxy:3128"),
            ("CI_READ", "ghp_abcdefghijklmnopqrstuvwxyz0123456789"),
            ("SLACK", "xoxb-1234567890-abcdefGHIJ"),
            (
                "DEPLOY",
                "-----BEGIN PRIVATE KEY-----\nMIIE\n-----END PRIVATE KEY-----",
            ),
        ];
        let kept = [
            ("PWD", "/home/u/repo"),
            ("OLDPWD", "/home/u"),
            ("PATH", "/usr/bin:/bin"),
            ("XDG_RUNTIME_DIR", "/run/user/1000"),
            ("XDG_CONFIG_HOME", "/home/u/.config"),
            ("SSH_AUTH_SOCK", "/tmp/ssh-x/agent.1"),
            ("XAUTHORITY", "/home/u/.Xauthority"),
            ("GIT_ASKPASS", "/usr/lib/ssh/askpass"),
            ("AWS_SHARED_CREDENTIALS_FILE", "/home/u/.aws/credentials"),
            ("PATCH_LEVEL", "2"),
            ("LOCAL_DATABASE_URL", "postgres://localhost:5432/db"),
            ("REPO", "https://github.com/org/repo.git"),
            ("LS_COLORS", "rs=0:di=01;34:ln=01;36:*.tar=01;31"),
        ];
        let vars = dropped
            .iter()
            .chain(&kept)
            .map(|(k, v)| (k.to_string(), v.to_string()));
        let env = ShellEnvPolicy::default().apply(vars.clone()).unwrap();
        for (name, value) in dropped {
            assert!(
                env.get(name).is_none_or(|v| v != value),
                "{name}={value} should be dropped"
            );
        }
        for (name, value) in kept {
            assert_eq!(env.get(name).map(String::as_str), Some(value), "{name}");
        }
        let keep_all = ShellEnvPolicy {
            ignore_default_excludes: true,
            ..Default::default()
        };
        assert_eq!(keep_all.apply(vars).unwrap().len(), 27);
    }

    #[test]
    fn core_keeps_only_core_vars() {
        let policy = ShellEnvPolicy {
            inherit: EnvInherit::Core,
            ..Default::default()
        };
        let env = policy.apply(vars()).unwrap();
        assert_eq!(names(&env), ["HOME", "LC_ALL", "PATH"]);
    }

    #[test]
    fn none_keeps_only_set() {
        let policy = ShellEnvPolicy {
            inherit: EnvInherit::None,
            set: BTreeMap::from([("A".into(), "1".into())]),
            ..Default::default()
        };
        assert_eq!(names(&policy.apply(vars()).unwrap()), ["A"]);
    }

    #[test]
    fn ignoring_default_excludes_still_drops_provider_keys() {
        let policy = ShellEnvPolicy {
            ignore_default_excludes: true,
            ..Default::default()
        };
        let env = policy.apply(vars()).unwrap();
        assert!(env.contains_key("FOO_API_KEY"));
        assert!(env.contains_key("my_token"));
        assert!(!env.contains_key("OPENAI_API_KEY"));
    }

    #[test]
    fn exclude_and_include_only_are_case_insensitive_globs() {
        let policy = ShellEnvPolicy {
            exclude: vec!["cargo_*".into()],
            include_only: vec!["*".into()],
            ..Default::default()
        };
        let env = policy.apply(vars()).unwrap();
        assert!(!env.contains_key("CARGO_HOME"));
        let policy = ShellEnvPolicy {
            include_only: vec!["p?th".into(), "home".into()],
            ..Default::default()
        };
        assert_eq!(names(&policy.apply(vars()).unwrap()), ["HOME", "PATH"]);
    }

    #[test]
    fn set_wins_over_every_filter() {
        let policy = ShellEnvPolicy {
            include_only: vec!["PATH".into()],
            set: BTreeMap::from([
                ("OPENAI_API_KEY".into(), "explicit".into()),
                ("PATH".into(), "/x".into()),
            ]),
            ..Default::default()
        };
        let env = policy.apply(vars()).unwrap();
        assert_eq!(env["OPENAI_API_KEY"], "explicit");
        assert_eq!(env["PATH"], "/x");
        assert_eq!(env.len(), 2);
    }

    #[test]
    fn bad_pattern_is_reported() {
        let policy = ShellEnvPolicy {
            exclude: vec!["[".into()],
            ..Default::default()
        };
        let err = policy.validate().unwrap_err();
        assert!(err.to_string().contains("`[`"), "{err}");
        assert!(policy.apply(vars()).is_err());
    }

    #[test]
    fn deserializes_from_toml_and_rejects_unknown_keys() {
        let policy: ShellEnvPolicy =
            toml::from_str("inherit = \"core\"\nexclude = [\"AWS_*\"]\n[set]\nCI = \"1\"\n")
                .unwrap();
        assert_eq!(policy.inherit, EnvInherit::Core);
        assert_eq!(policy.set["CI"], "1");
        assert!(toml::from_str::<ShellEnvPolicy>("inherits = \"all\"").is_err());
    }
}
