//! SOUL.md: who the agent is (the identity section of the system prompt,
//! docs/prompt.md).
//!
//! - `$COGNI_HOME/SOUL.md` replaces the model family's template
//!   (`base_instructions` / `base_instructions_file` in config win over it);
//! - the project's `.cogni/SOUL.md` (in the working directory) is appended
//!   to the identity, or replaces it when its front matter says so:
//!
//! ```markdown
//! +++
//! replace = true
//! +++
//! You are the release bot of this repository. ...
//! ```
//!
//! Each file's body is capped at `project_doc_max_bytes`, like AGENTS.md.
//! A file that exists but cannot be read (also one that is not a regular
//! file, or is larger than [`SPEC_FILE_MAX_BYTES`]), or whose front matter
//! is invalid, is a configuration error naming the file.

use super::ConfigError;
use cogni_core::ProjectSoul;
use cogni_process::truncate::floor_char_boundary;
use cogni_tools::fs::{read_text_limited, SPEC_FILE_MAX_BYTES};
use serde::Deserialize;
use std::path::Path;

pub const FILE_NAME: &str = "SOUL.md";

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct FrontMatter {
    /// Replace the identity instead of extending it (project file only).
    replace: Option<bool>,
}

/// `$COGNI_HOME/SOUL.md`, or `None` when there is none (or it is blank).
pub fn load_global(home: &Path, max_bytes: usize) -> Result<Option<String>, ConfigError> {
    Ok(read(&home.join(FILE_NAME), max_bytes)?.map(|(_, text)| text))
}

/// The project's `.cogni/SOUL.md` under `cwd`, or `None`.
pub fn load_project(cwd: &Path, max_bytes: usize) -> Result<Option<ProjectSoul>, ConfigError> {
    Ok(
        read(&cwd.join(".cogni").join(FILE_NAME), max_bytes)?.map(|(meta, text)| ProjectSoul {
            text,
            replace: meta.replace.unwrap_or(false),
        }),
    )
}

/// The front matter and the capped body of `path`; `None` when the file
/// does not exist or its body is blank.
fn read(path: &Path, max_bytes: usize) -> Result<Option<(FrontMatter, String)>, ConfigError> {
    let source = match read_text_limited(path, SPEC_FILE_MAX_BYTES) {
        Ok(s) => s,
        Err(e) if e.is_missing() => return Ok(None),
        Err(e) => {
            return Err(ConfigError(format!(
                "{e} (make it a readable UTF-8 text file, or remove it)"
            )))
        }
    };
    let fail = |m: String| ConfigError(format!("{}: {m}", path.display()));
    let (front, body) = cogni_tools::front_matter::split(&source).map_err(fail)?;
    let meta: FrontMatter = toml::from_str(front).map_err(|e| {
        fail(format!(
            "invalid front matter ({}); the only key is `replace = true` (TOML)",
            cogni_spec::plain_message(e.message())
        ))
    })?;
    let body = body.trim();
    if body.is_empty() {
        return Ok(None);
    }
    let text = if body.len() > max_bytes {
        format!(
            "{}\n[{} truncated at {max_bytes} bytes]",
            &body[..floor_char_boundary(body, max_bytes)],
            path.display()
        )
    } else {
        body.to_string()
    };
    Ok(Some((meta, text)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn global_soul_is_read_and_capped() {
        let home = tempfile::tempdir().unwrap();
        assert_eq!(load_global(home.path(), 100).unwrap(), None);
        std::fs::write(home.path().join("SOUL.md"), "  \n").unwrap();
        assert_eq!(load_global(home.path(), 100).unwrap(), None, "blank");
        std::fs::write(home.path().join("SOUL.md"), "You are Ada.\n").unwrap();
        assert_eq!(
            load_global(home.path(), 100).unwrap().as_deref(),
            Some("You are Ada.")
        );
        std::fs::write(home.path().join("SOUL.md"), "ééééé").unwrap();
        let capped = load_global(home.path(), 5).unwrap().unwrap();
        assert!(
            capped.starts_with("éé\n["),
            "cut on a char boundary: {capped}"
        );
        assert!(
            capped.ends_with("SOUL.md truncated at 5 bytes]"),
            "{capped}"
        );
    }

    #[test]
    fn project_soul_extends_unless_its_front_matter_says_replace() {
        let cwd = tempfile::tempdir().unwrap();
        assert_eq!(load_project(cwd.path(), 1000).unwrap(), None);
        let dir = cwd.path().join(".cogni");
        std::fs::create_dir(&dir).unwrap();
        std::fs::write(dir.join("SOUL.md"), "Be terse.\n").unwrap();
        assert_eq!(
            load_project(cwd.path(), 1000).unwrap(),
            Some(ProjectSoul {
                text: "Be terse.".into(),
                replace: false
            })
        );
        std::fs::write(
            dir.join("SOUL.md"),
            "+++\nreplace = true\n+++\nYou are Bo.\n",
        )
        .unwrap();
        assert_eq!(
            load_project(cwd.path(), 1000).unwrap(),
            Some(ProjectSoul {
                text: "You are Bo.".into(),
                replace: true
            })
        );
    }

    /// `config::load` with `home` and `cwd`, and `toml` as ./cogni.toml.
    fn load_config(home: &Path, cwd: &Path, toml: &str) -> Result<crate::Config, ConfigError> {
        std::fs::write(cwd.join("cogni.toml"), toml).unwrap();
        crate::load(crate::Sources {
            home: home.to_path_buf(),
            cwd: cwd.to_path_buf(),
            explicit: None,
            flags: Default::default(),
            env: &|k: &str| (k == "OPENAI_API_KEY").then(|| "k".to_string()),
        })
    }

    #[cfg(unix)]
    #[test]
    fn config_loads_both_souls_capped_and_the_aliases() {
        let home = tempfile::tempdir().unwrap();
        let cwd = tempfile::tempdir().unwrap();
        std::fs::write(home.path().join("SOUL.md"), "Ada.").unwrap();
        std::fs::create_dir(cwd.path().join(".cogni")).unwrap();
        std::fs::write(cwd.path().join(".cogni/SOUL.md"), "Use tabs.\nAlways.").unwrap();
        let c = load_config(
            home.path(),
            cwd.path(),
            "project_doc_max_bytes = 9\n[model_aliases]\nfast = \"gpt-4.1-mini\"\n",
        )
        .unwrap()
        .session;
        assert_eq!(c.prompt.soul.as_deref(), Some("Ada."));
        let project = c.prompt.project_soul.unwrap();
        assert!(!project.replace);
        assert!(project.text.starts_with("Use tabs.\n["), "{}", project.text);
        assert!(
            project.text.contains("truncated at 9 bytes"),
            "{}",
            project.text
        );
        assert_eq!(c.model_aliases["fast"], "gpt-4.1-mini");

        let e = load_config(home.path(), cwd.path(), "[model_aliases]\nfast = \"\"\n")
            .unwrap_err()
            .to_string();
        assert!(e.contains("[model_aliases] fast"), "{e}");
        std::fs::write(
            cwd.path().join(".cogni/SOUL.md"),
            "+++\nreplace = 1\n+++\nx",
        )
        .unwrap();
        let e = load_config(home.path(), cwd.path(), "")
            .unwrap_err()
            .to_string();
        assert!(e.contains(".cogni/SOUL.md: invalid front matter"), "{e}");
    }

    #[test]
    fn bad_soul_files_are_errors_naming_the_file_and_the_fix() {
        let cwd = tempfile::tempdir().unwrap();
        let dir = cwd.path().join(".cogni");
        std::fs::create_dir(&dir).unwrap();
        let path = dir.join("SOUL.md");
        std::fs::write(&path, "+++\nreplace: true\n+++\nx").unwrap();
        let e = load_project(cwd.path(), 1000).unwrap_err().to_string();
        assert!(e.starts_with(&path.display().to_string()), "{e}");
        assert!(e.contains("`replace = true`"), "{e}");
        std::fs::write(&path, "+++\nreplace = true\nx").unwrap();
        let e = load_project(cwd.path(), 1000).unwrap_err().to_string();
        assert!(e.contains("no closing `+++`"), "{e}");
        std::fs::write(&path, "+++\nrepalce = true\n+++\nx").unwrap();
        let e = load_project(cwd.path(), 1000).unwrap_err().to_string();
        assert!(e.contains("repalce"), "{e}");
        std::fs::write(&path, [0xff, 0xfe, b'x']).unwrap();
        let e = load_project(cwd.path(), 1000).unwrap_err().to_string();
        assert!(e.contains("SOUL.md is not UTF-8 text"), "{e}");
        assert!(e.contains("readable UTF-8 text file"), "{e}");
        // A directory where the file should be, a device behind a symlink.
        std::fs::remove_file(&path).unwrap();
        std::fs::create_dir(&path).unwrap();
        let e = load_project(cwd.path(), 1000).unwrap_err().to_string();
        assert!(
            e.contains("SOUL.md is a directory, not a regular file"),
            "{e}"
        );
        #[cfg(unix)]
        {
            std::fs::remove_dir(&path).unwrap();
            std::os::unix::fs::symlink("/dev/zero", &path).unwrap();
            let e = load_project(cwd.path(), 1000).unwrap_err().to_string();
            assert!(e.contains("SOUL.md is a character device"), "{e}");
        }
    }
}
