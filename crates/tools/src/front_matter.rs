//! Front matter: a block at the top of a markdown file between two `+++`
//! lines (or two `---` lines). Agent cards and SOUL.md write TOML in it;
//! SKILL.md files (and Claude Code's sub-agent files) write YAML, which
//! [`yaml`] reads.

use serde::de::DeserializeOwned;

/// Split `text` into its front matter and its body. Without front matter
/// the front is empty and the body is the whole text; a byte order mark is
/// ignored. An opening line without its closing one is an error naming
/// the delimiter.
pub fn split(text: &str) -> Result<(&str, &str), String> {
    let text = text.trim_start_matches('\u{feff}');
    let Some(delim) = ["+++", "---"]
        .into_iter()
        .find(|d| text.lines().next().is_some_and(|l| l.trim_end() == *d))
    else {
        return Ok(("", text));
    };
    let after = &text[text.find('\n').map_or(text.len(), |i| i + 1)..];
    let close = after
        .match_indices(delim)
        .find(|(i, _)| *i == 0 || after[..*i].ends_with('\n'))
        .map(|(i, _)| i)
        .ok_or_else(|| format!("the front matter has no closing `{delim}`"))?;
    let body_start = after[close..]
        .find('\n')
        .map_or(after.len(), |i| close + i + 1);
    Ok((&after[..close], &after[body_start..]))
}

/// Read a YAML front matter block (what [`split`] returned) as `T`. An
/// empty block is an empty mapping. The error is one line: what is wrong
/// and where, by line and column of the file (the block starts on its
/// second line).
pub fn yaml<T: DeserializeOwned>(front: &str) -> Result<T, String> {
    let front = if front.trim().is_empty() { "{}" } else { front };
    serde_saphyr::from_str(front).map_err(|e| {
        let mut options = serde_saphyr::RenderOptions::new(&serde_saphyr::UserMessageFormatter);
        options.snippets = serde_saphyr::SnippetMode::Off;
        options.line_offset = 1;
        let text = e.render_with_options(options);
        text.split_whitespace().collect::<Vec<_>>().join(" ")
    })
}

#[cfg(test)]
mod tests {
    use super::{split, yaml};

    #[test]
    fn splits_either_delimiter_and_leaves_plain_text_alone() {
        assert_eq!(
            split("+++\na = 1\n+++\nbody\n").unwrap(),
            ("a = 1\n", "body\n")
        );
        assert_eq!(split("\u{feff}---\nb = 2\n---\n").unwrap(), ("b = 2\n", ""));
        assert_eq!(split("just text\n+++\n").unwrap(), ("", "just text\n+++\n"));
        let err = split("+++\na = 1\nbody\n").unwrap_err();
        assert!(err.contains("no closing `+++`"), "{err}");
    }

    #[derive(Debug, serde::Deserialize, PartialEq)]
    struct Card {
        name: String,
        #[serde(default)]
        tools: Vec<String>,
    }

    #[test]
    fn yaml_reads_a_block_and_says_what_is_wrong() {
        let (front, _) = split("---\nname: pdf\ntools: [read_file, shell]\n---\nbody").unwrap();
        assert_eq!(
            yaml::<Card>(front).unwrap(),
            Card {
                name: "pdf".into(),
                tools: vec!["read_file".into(), "shell".into()]
            }
        );
        let err = yaml::<Card>("name: pdf\ntools: [unclosed\n").unwrap_err();
        assert!(!err.contains('\n'), "one line: {err}");
        assert!(err.contains("line 3"), "the file's line: {err}");
        let err = yaml::<Card>("tools: []\n").unwrap_err();
        assert!(err.contains("name"), "{err}");
        assert!(yaml::<std::collections::BTreeMap<String, String>>("")
            .unwrap()
            .is_empty());
    }
}
