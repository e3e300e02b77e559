//! API key resolution: environment variable, then key file, then a
//! plaintext key in config (with a warning). A provider that names an
//! `env_key` and has none of them fails later in `start_session`, naming
//! the variable, before any request.

use super::{ConfigError, ProviderFile};
use cogni_provider::ProviderInfo;
use cogni_tools::fs::{read_text_limited, SPEC_FILE_MAX_BYTES};
use std::path::Path;

pub(super) fn resolve_key(
    provider: &mut ProviderInfo,
    file: Option<&ProviderFile>,
    home: &Path,
    env: &dyn Fn(&str) -> Option<String>,
    warnings: &mut Vec<String>,
) -> Result<(), ConfigError> {
    if let Some(key) = provider
        .env_key
        .as_deref()
        .and_then(env)
        .map(|k| k.trim().to_string())
        .filter(|k| !k.is_empty())
    {
        provider.api_key = Some(key);
        return Ok(());
    }
    let explicit = file.and_then(|f| f.key_file.clone());
    let default = home.join("keys").join(&provider.id);
    let key_file = explicit
        .clone()
        .or_else(|| default.is_file().then_some(default));
    if let Some(path) = key_file {
        let key = read_text_limited(&path, SPEC_FILE_MAX_BYTES).map_err(|e| {
            ConfigError(format!(
                "the API key file for provider `{}`: {e}",
                provider.id
            ))
        })?;
        let key = key.trim();
        if key.is_empty() {
            return Err(ConfigError(format!(
                "the API key file {} for provider `{}` is empty",
                path.display(),
                provider.id
            )));
        }
        refuse_if_readable_by_others(&path, &provider.id)?;
        provider.api_key = Some(key.to_string());
        return Ok(());
    }
    if let Some(key) = file
        .and_then(|f| f.api_key.as_deref())
        .filter(|k| !k.trim().is_empty())
    {
        warnings.push(format!(
            "the API key for provider `{}` is in a config file in plain text; prefer ${} or key_file",
            provider.id,
            provider.env_key.as_deref().unwrap_or("<env_key>")
        ));
        provider.api_key = Some(key.trim().to_string());
    }
    Ok(())
}

/// A key file others can read is a leaked key waiting to happen: refuse
/// it. (Unix modes; on Windows a file under the user's profile is private
/// to the user by its ACL, which this does not read.)
#[cfg(windows)]
fn refuse_if_readable_by_others(_path: &Path, _provider: &str) -> Result<(), ConfigError> {
    Ok(())
}

/// A key file others can read is a leaked key waiting to happen: refuse it.
#[cfg(unix)]
fn refuse_if_readable_by_others(path: &Path, provider: &str) -> Result<(), ConfigError> {
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(path)
        .map(|m| m.permissions().mode())
        .unwrap_or(0);
    if mode & 0o077 != 0 {
        return Err(ConfigError(format!(
            "the API key file {} for provider `{provider}` can be read by other users (mode {:o}); run `chmod 600 {}`",
            path.display(),
            mode & 0o777,
            path.display()
        )));
    }
    Ok(())
}
