//! Front matter: a TOML block at the top of a markdown file, between two
//! `+++` lines (or two `---` lines), as agent cards and SOUL.md use it.

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

#[cfg(test)]
mod tests {
    use super::split;

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
}
