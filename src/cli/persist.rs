//! Saving and resuming sessions for the front doors (`cogni run`, the
//! REPL, `cogni resume`) and `cogni sessions`.

use super::exit;
use super::{setup, SessionsArgs};
use crate::agent::{Session, SessionConfig};
use crate::config::ConfigFile;
use crate::sandbox::redact::redact;
use crate::store::{self, Header, Redactor, SessionFile, Store};
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

/// Which saved session to continue.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Resume {
    Last,
    Id(String),
}

/// How a front door saves its session.
#[derive(Debug, Clone)]
pub struct Persist {
    pub store: Store,
    /// `--no-persist`.
    pub enabled: bool,
    pub resume: Option<Resume>,
    /// `--fork`: continue a saved session in a new file.
    pub fork: bool,
}

fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

impl Persist {
    /// The id of the session to resume, if any.
    fn resume_id(&self) -> Result<Option<String>, String> {
        let id = match &self.resume {
            None => return Ok(None),
            Some(Resume::Last) => self.store.last(),
            Some(Resume::Id(query)) => self.store.resolve(query),
        };
        id.map(Some).map_err(|e| e.to_string())
    }

    /// Before `start_session`: a resumed session keeps its model unless
    /// the user chose another (and the provider is the same).
    pub fn prepare(&self, config: &mut SessionConfig) -> Result<(), String> {
        let Some(id) = self.resume_id()? else {
            return Ok(());
        };
        let header = self.store.header(&id).map_err(|e| e.to_string())?;
        if config.model_override.is_none() && header.provider == config.provider.id {
            config.model_override = Some(header.model);
        }
        Ok(())
    }

    /// After `start_session`: restore the resumed history and attach the
    /// session file, or create a new one. Warnings (skipped lines, repaired
    /// calls) go to stderr. `None` with `--no-persist`.
    pub fn attach(
        &self,
        session: &mut Session,
        redact: Redactor,
    ) -> Result<Option<Arc<SessionFile>>, String> {
        let resume = self.resume_id()?;
        if !self.enabled {
            if let Some(id) = resume {
                let loaded = self.store.load(&id).map_err(|e| e.to_string())?;
                warn_all(&loaded.warnings);
                session.restore_history(loaded.history);
                session.restore_checkpoints(loaded.checkpoints);
            }
            return Ok(None);
        }
        let file = match resume {
            Some(id) => {
                let fork = self.fork.then(|| (session.id.clone(), now()));
                let (loaded, file) = self
                    .store
                    .open(&id, fork.as_ref().map(|(id, t)| (id.as_str(), *t)), redact)
                    .map_err(|e| e.to_string())?;
                warn_all(&loaded.warnings);
                session.id = loaded.header.id;
                session.restore_history(loaded.history);
                session.restore_checkpoints(loaded.checkpoints);
                file
            }
            None => {
                let ctx = session.context();
                let header = Header::new(
                    &session.id,
                    now(),
                    &ctx.cwd,
                    &ctx.model,
                    session.provider_id(),
                );
                self.store
                    .create(&header, session.history(), redact)
                    .map_err(|e| e.to_string())?
            }
        };
        let file = Arc::new(file);
        session.set_history_observer(file.clone());
        Ok(Some(file))
    }
}

fn warn_all(warnings: &[String]) {
    for w in warnings {
        eprintln!("cogni: warning: session file: {w}");
    }
}

/// What keeps secrets out of everything cogni writes to disk (session
/// files, the log, `-o`): the known key shapes (`sandbox::redact`) and the
/// providers' own keys of `configs`, whatever their shape. It works on
/// text before the text is encoded.
pub fn redactor<'a>(configs: impl IntoIterator<Item = &'a SessionConfig>) -> Redactor {
    let mut keys: Vec<String> = Vec::new();
    for key in configs
        .into_iter()
        .filter_map(|c| c.provider.api_key.as_deref())
        .filter(|k| k.len() >= 8)
    {
        keys.push(key.to_string());
        // The key as it appears inside JSON text (a call's arguments).
        if let Ok(quoted) = serde_json::to_string(key) {
            keys.push(quoted[1..quoted.len() - 1].to_string());
        }
    }
    keys.sort();
    keys.dedup();
    Arc::new(move |text: &str| {
        let mut text = redact(text).into_owned();
        for key in &keys {
            if text.contains(key.as_str()) {
                text = text.replace(key.as_str(), "[REDACTED]");
            }
        }
        text
    })
}

/// Report a saving failure once, loudly.
pub fn report_failure(file: Option<&SessionFile>, reported: &mut bool) {
    if let Some(failure) = file.and_then(|f| f.failure()) {
        if !*reported {
            eprintln!("cogni: error: {failure}");
            *reported = true;
        }
    }
}

/// `cogni sessions`: id, start time, cwd, first prompt, tokens.
pub fn list(args: SessionsArgs) -> u8 {
    let (launch_dir, cwd) = match setup::dirs(&args.common) {
        Ok(d) => d,
        Err(e) => {
            eprintln!("cogni: {e}");
            return exit::USAGE;
        }
    };
    let home = match setup::load(&args.common, &launch_dir, cwd, ConfigFile::default()) {
        Ok(loaded) => loaded.home,
        Err(e) => {
            eprintln!("cogni: {e}");
            return exit::USAGE;
        }
    };
    let store = Store::new(&home);
    match store.list() {
        Ok(list) if list.is_empty() => {
            eprintln!("no saved sessions in {}", store.dir().display());
            exit::DONE
        }
        Ok(list) => {
            println!(
                "{:<24}  {:<16}  {:>8}  {:<28}  first prompt",
                "id", "started (UTC)", "tokens", "cwd"
            );
            for s in list {
                println!("{}", summary_line(&s));
            }
            exit::DONE
        }
        Err(e) => {
            eprintln!("cogni: {e}");
            exit::USAGE
        }
    }
}

/// One line of the listing (also used by the REPL's `/sessions`).
pub fn summary_line(s: &store::Summary) -> String {
    let prompt: String = s
        .first_prompt
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .take(60)
        .collect();
    format!(
        "{:<24}  {:<16}  {:>8}  {:<28}  {}",
        s.id,
        store::format_time(s.started_at),
        s.tokens,
        s.cwd.display(),
        prompt.trim()
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::provider::{ProviderInfo, WireApi};

    #[test]
    fn the_redactor_removes_key_shapes_and_the_providers_own_key() {
        let mut info = ProviderInfo::new("local", "http://127.0.0.1:1", WireApi::Chat);
        info.api_key = Some("plain\"odd-key-42".into());
        let config = SessionConfig::new(info, std::path::PathBuf::from("/repo"));
        let redact = redactor([&config]);
        let text = "a plain\"odd-key-42 and\nsk-abcdefghijklmnopqrstuvwx end";
        assert_eq!(redact(text), "a [REDACTED] and\n[REDACTED] end");
        // Inside JSON text, e.g. a call's arguments.
        let arguments = serde_json::json!({ "command": text }).to_string();
        let clean = redact(&arguments);
        let value: serde_json::Value = serde_json::from_str(&clean).unwrap();
        assert_eq!(value["command"], "a [REDACTED] and\n[REDACTED] end");
    }
}
