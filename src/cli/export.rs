//! `cogni sessions export ID --format md|html|json`: a saved session as a
//! readable transcript, rendered by the same renderer as the transcripts
//! in report.html (see `transcript`).

use super::{exit, setup, ConfigArgs};
use crate::config::ConfigFile;
use crate::store::{self, Store};
use crate::tools::fs::write_atomic;
use crate::transcript::{self, html, markdown};
use clap::{Args, ValueEnum};
use std::io::Write;
use std::path::PathBuf;

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Format {
    /// Markdown.
    Md,
    /// One self-contained HTML page.
    Html,
    /// The transcript's entries as JSON.
    Json,
}

#[derive(Debug, Args)]
pub struct ExportArgs {
    /// The session id (or a unique prefix of it); see `cogni sessions`.
    pub id: String,

    /// md, html or json.
    #[arg(long, value_enum, default_value_t = Format::Md)]
    pub format: Format,

    /// Write to FILE instead of stdout.
    #[arg(short = 'o', long, value_name = "FILE")]
    pub output: Option<PathBuf>,

    #[command(flatten)]
    pub common: ConfigArgs,
}

pub fn run(args: ExportArgs) -> u8 {
    match export(&args) {
        Ok(text) => {
            let written = match &args.output {
                Some(path) => write_atomic(path, text.as_bytes())
                    .map(|_| ())
                    .map_err(|e| format!("cannot write {}: {e}", path.display())),
                None => {
                    let mut out = std::io::stdout().lock();
                    match out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
                        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => {
                            Err(format!("cannot write to stdout: {e}"))
                        }
                        _ => Ok(()),
                    }
                }
            };
            match written {
                Ok(()) => exit::DONE,
                Err(message) => {
                    eprintln!("cogni: {message}");
                    exit::TASK_FAILED
                }
            }
        }
        Err(message) => {
            eprintln!("cogni: {message}");
            exit::USAGE
        }
    }
}

fn export(args: &ExportArgs) -> Result<String, String> {
    let (launch_dir, cwd) = setup::dirs(&args.common)?;
    let home = setup::load(&args.common, &launch_dir, cwd, ConfigFile::default())?.home;
    let store = Store::new(&home);
    let id = store.resolve(&args.id).map_err(|e| e.to_string())?;
    let loaded = store.load(&id).map_err(|e| e.to_string())?;
    let h = &loaded.header;
    let t = transcript::from_history(&loaded.history);
    let title = format!("cogni session {}", h.id);
    let header = [
        format!("started {} UTC", store::format_time(h.started_at)),
        format!("model {} ({})", h.model, h.provider),
        format!("in {}", h.cwd.display()),
        format!(
            "{} tokens in, {} out",
            loaded.usage.input_tokens, loaded.usage.output_tokens
        ),
    ];
    Ok(match args.format {
        Format::Md => markdown::render(&title, &header, &t),
        Format::Html => {
            let lines: String = header
                .iter()
                .map(|l| format!("<li>{}</li>", html::escape(l)))
                .collect();
            html::page(&title, &format!("<ul>{lines}</ul>"), &t)
        }
        Format::Json => {
            let value = serde_json::json!({
                "session": {
                    "id": h.id,
                    "started_at": h.started_at,
                    "model": h.model,
                    "provider": h.provider,
                    "cwd": h.cwd,
                    "input_tokens": loaded.usage.input_tokens,
                    "output_tokens": loaded.usage.output_tokens,
                },
                "transcript": t,
            });
            let mut text = serde_json::to_string_pretty(&value).map_err(|e| e.to_string())?;
            text.push('\n');
            text
        }
    })
}
