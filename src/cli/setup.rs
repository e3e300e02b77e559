//! Loading the configuration for any command: directories, the flags
//! layer, `--script`, the config files and environment.

use super::ConfigArgs;
use crate::config::{self, Config, ConfigFile, ProviderFile, Sources};
use crate::protocol::SandboxMode;
use crate::sandbox;
use crate::store::Redactor;
use std::io::Write;
use std::path::{Path, PathBuf};

/// The loaded configuration and where it came from.
pub struct Loaded {
    pub config: Config,
    /// `$COGNI_HOME`.
    pub home: PathBuf,
}

fn env(key: &str) -> Option<String> {
    std::env::var(key).ok()
}

/// The directory cogni was started in and the working directory (`-C`).
pub fn dirs(args: &ConfigArgs) -> Result<(PathBuf, PathBuf), String> {
    let launch_dir =
        std::env::current_dir().map_err(|e| format!("cannot read the current directory: {e}"))?;
    let cwd = match &args.cd {
        Some(dir) => crate::sandbox::sys::canonicalize(&launch_dir.join(dir))
            .map_err(|e| format!("-C {}: {e}", dir.display()))?,
        None => launch_dir.clone(),
    };
    if !cwd.is_dir() {
        return Err(format!("-C {}: not a directory", cwd.display()));
    }
    Ok((launch_dir, cwd))
}

/// Load every layer; `flags` holds the command's own options, to which the
/// common ones (model, provider, script) are added. Warnings go to stderr.
pub fn load(
    args: &ConfigArgs,
    launch_dir: &std::path::Path,
    cwd: PathBuf,
    mut flags: ConfigFile,
) -> Result<Loaded, String> {
    flags.model = args.model.clone();
    flags.provider = args.provider.clone();
    flags.profile = args.profile.clone();
    if let Some(script) = &args.script {
        if args.provider.as_deref().is_some_and(|p| p != "scripted") {
            return Err(
                "--script needs the scripted provider; drop --provider or use --provider scripted"
                    .into(),
            );
        }
        flags.provider = Some("scripted".into());
        if flags.model.is_none() {
            // A recording names its model: the replay gets its tools and prices.
            let path = launch_dir.join(script);
            let recorded =
                crate::provider::scripted::Script::from_file(&path).map_err(|e| e.to_string())?;
            flags.model = recorded.model;
        }
        flags.model_providers.insert(
            "scripted".into(),
            ProviderFile {
                script: Some(launch_dir.join(script)),
                ..Default::default()
            },
        );
    }
    let explicit = args.config.as_ref().map(|p| launch_dir.join(p));
    let home = home();
    let config = config::load(Sources {
        home: home.clone(),
        cwd,
        explicit,
        flags,
        env: &env,
    })
    .map_err(|e| e.to_string())?;
    for warning in &config.warnings {
        eprintln!("cogni: warning: {warning}");
    }
    Ok(Loaded { config, home })
}

/// `$COGNI_HOME` (default `~/.cogni`).
pub fn home() -> PathBuf {
    config::cogni_home(&env)
}

/// The current-thread runtime every command runs on.
pub(super) fn runtime() -> Result<tokio::runtime::Runtime, String> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("cannot start the async runtime: {e}"))
}

/// Commands run confined, or the user chose otherwise and is told so. A
/// workspace in `/` is refused under workspace-write: the workspace is
/// what commands may write, and that would be the whole file system
/// (an MCP client or an editor that starts cogni from `/` and names no
/// directory would get that without asking for it).
pub(super) fn check_sandbox(mode: SandboxMode, no_sandbox: bool, cwd: &Path) -> Result<(), String> {
    check_workspace(mode, cwd)?;
    if mode == SandboxMode::DangerFullAccess {
        eprintln!(
            "cogni: warning: {}: commands run unconfined, with your permissions and network",
            if no_sandbox {
                "--no-sandbox"
            } else {
                "sandbox danger-full-access"
            }
        );
        return Ok(());
    }
    match sandbox::probe().backend() {
        Ok(backend) => {
            tracing::info!(%backend, mode = mode.as_str(), "sandbox");
            Ok(())
        }
        Err(unavailable) => Err(unavailable.to_string()),
    }
}

/// A workspace in `/` under workspace-write is refused (see
/// [`check_sandbox`]); also what `--acp` checks before an agent may write.
pub(super) fn check_workspace(mode: SandboxMode, cwd: &Path) -> Result<(), String> {
    if mode == SandboxMode::WorkspaceWrite && cwd.canonicalize().is_ok_and(|c| c.parent().is_none())
    {
        return Err(format!(
            "the working directory is {}: with sandbox workspace-write commands could write \
             anywhere on the file system; run cogni in a project's directory (-C DIR, or \
             `cwd` of the request), or choose --sandbox read-only (or danger-full-access, \
             if you mean it)",
            cwd.display()
        ));
    }
    Ok(())
}

/// Diagnostics go to `$COGNI_HOME/log/cogni.log`, filtered by RUST_LOG,
/// with secrets redacted by `redact` (see [`persist::redactor`]).
pub(super) fn init_logging(home: &Path, redact: Redactor) {
    let Ok(file) = open_log(&home.join("log")) else {
        return;
    };
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn,cogni=info"));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(false)
        .with_writer(std::sync::Mutex::new(RedactedFile { file, redact }))
        .try_init();
}

/// `DIR/cogni.log` for appending, private to the user: the directory 0700,
/// the file 0600, also when they were made earlier with looser modes.
/// (On Windows the profile directory's ACL keeps them private.)
fn open_log(dir: &Path) -> std::io::Result<std::fs::File> {
    let mut builder = std::fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
    builder.create(dir)?;
    let mut options = std::fs::OpenOptions::new();
    options.create(true).append(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    let file = options.open(dir.join("cogni.log"))?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700))?;
        file.set_permissions(std::fs::Permissions::from_mode(0o600))?;
    }
    Ok(file)
}

/// The log file, with secrets redacted from every record.
struct RedactedFile {
    file: std::fs::File,
    redact: Redactor,
}

impl Write for RedactedFile {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        // The formatter writes one whole record per call; values in it may
        // be escaped (`Debug`), which the redactor's patterns allow for.
        match std::str::from_utf8(buf) {
            Ok(text) => self.file.write_all((self.redact)(text).as_bytes())?,
            Err(_) => self.file.write_all(buf)?,
        }
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.file.flush()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_log_writer_redacts_each_record() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("log");
        let mut info = crate::provider::ProviderInfo::new(
            "local",
            "http://127.0.0.1:1",
            crate::provider::WireApi::Chat,
        );
        info.api_key = Some("odd-provider-key-42".into());
        let config = crate::agent::SessionConfig::new(info, std::path::PathBuf::from("/repo"));
        let mut file = RedactedFile {
            file: std::fs::File::create(&path).unwrap(),
            redact: super::super::persist::redactor([&config]),
        };
        let record = b"INFO request key=sk-abcdefghijklmnopqrstuvwx auth=Bearer abcdefgh12345678\n";
        assert_eq!(file.write(record).unwrap(), record.len());
        // Values formatted with `Debug`: escaped newlines and tabs before
        // the secrets, and the provider's own key.
        let debug = format!(
            "DEBUG output={:?} key={:?}\n",
            "a\nghp_abcdefghijklmnopqrstuvwxyz0123456789\n\tAKIAIOSFODNN7EXAMPLE",
            "odd-provider-key-42"
        );
        file.write_all(debug.as_bytes()).unwrap();
        file.write_all(b"\xff raw bytes pass\n").unwrap();
        let written = std::fs::read(&path).unwrap();
        assert_eq!(
            String::from_utf8_lossy(&written),
            String::from_utf8_lossy(
                b"INFO request key=[REDACTED] auth=Bearer [REDACTED]\n\
                  DEBUG output=\"a\\n[REDACTED]\\n\\t[REDACTED]\" key=\"[REDACTED]\"\n\
                  \xff raw bytes pass\n"
            )
        );
    }
}
