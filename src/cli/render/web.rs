//! The provider's own web searches and the pages an answer cites, for
//! people: one line a search, and the cited pages, each once, after the
//! answer.

use super::{one_line, paint};
use crate::protocol::{Citation, WebSource};

/// Pages listed after an answer at most (an answer citing more says how
/// many were left out).
const MAX_SOURCES: usize = 20;

/// `web search "query": 3 results · docs.rs, github.com, …` (or why it
/// failed).
pub(in crate::cli) fn search_line(
    color: bool,
    query: &str,
    results: &[WebSource],
    error: Option<&str>,
) -> String {
    let query = if query.is_empty() {
        String::new()
    } else {
        format!(" \"{}\"", one_line(query, 80))
    };
    if let Some(code) = error {
        return paint(color, "33", &format!("⌕ web search{query} failed: {code}"));
    }
    let mut hosts: Vec<&str> = Vec::new();
    for host in results.iter().map(|r| host_of(&r.url)) {
        if !hosts.contains(&host) {
            hosts.push(host);
        }
    }
    let more = if hosts.len() > 3 { ", …" } else { "" };
    hosts.truncate(3);
    let found = match results.len() {
        0 => String::new(),
        1 => format!(": 1 result · {}", hosts.join(", ")),
        n => format!(": {n} results · {}{more}", hosts.join(", ")),
    };
    paint(color, "36", &format!("⌕ web search{query}{found}"))
}

/// The host of `url` (all of it when it has none).
fn host_of(url: &str) -> &str {
    let rest = url.split_once("://").map_or(url, |(_, rest)| rest);
    rest.split(['/', '?', '#']).next().unwrap_or(rest)
}

/// The pages an answer cited, in the order first cited, each once.
#[derive(Debug, Default)]
pub(in crate::cli) struct Sources {
    pages: Vec<WebSource>,
    /// Citations of pages past [`MAX_SOURCES`].
    left_out: usize,
}

impl Sources {
    pub(in crate::cli) fn add(&mut self, citation: &Citation) {
        if self.pages.iter().any(|p| p.url == citation.page.url) {
            return;
        }
        if self.pages.len() == MAX_SOURCES {
            self.left_out += 1;
            return;
        }
        self.pages.push(citation.page.clone());
    }

    /// `sources:` and a line a page (`[1] title · url`), or `None` when
    /// nothing was cited; the list starts over.
    pub(in crate::cli) fn take(&mut self, color: bool) -> Option<String> {
        let pages = std::mem::take(&mut self.pages);
        let left_out = std::mem::take(&mut self.left_out);
        if pages.is_empty() {
            return None;
        }
        let mut lines = vec![paint(color, "2", "sources:")];
        for (n, page) in pages.iter().enumerate() {
            let title = if page.title.is_empty() {
                String::new()
            } else {
                format!("{} · ", one_line(&page.title, 80))
            };
            lines.push(format!("  [{}] {title}{}", n + 1, page.url));
        }
        if left_out > 0 {
            lines.push(paint(color, "2", &format!("  … {left_out} more")));
        }
        Some(lines.join("\n"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn page(url: &str, title: &str) -> WebSource {
        WebSource {
            url: url.into(),
            title: title.into(),
        }
    }

    #[test]
    fn a_search_names_its_query_count_and_first_hosts() {
        let results = [
            page("https://docs.rs/tokio", "tokio"),
            page("https://docs.rs/serde", "serde"),
            page("https://github.com/x", ""),
            page("https://blog.rust-lang.org/a?b", ""),
            page("http://example.com", ""),
        ];
        assert_eq!(
            search_line(false, "rust async", &results, None),
            "⌕ web search \"rust async\": 5 results · docs.rs, github.com, blog.rust-lang.org, …"
        );
        assert_eq!(
            search_line(false, "q", &[], Some("max_uses_exceeded")),
            "⌕ web search \"q\" failed: max_uses_exceeded"
        );
    }

    #[test]
    fn cited_pages_are_listed_once_each_and_the_list_starts_over() {
        let mut sources = Sources::default();
        assert_eq!(sources.take(false), None);
        for (url, title) in [
            ("https://a.dev/1", "A"),
            ("https://b.dev", ""),
            ("https://a.dev/1", "A"),
        ] {
            sources.add(&Citation {
                page: page(url, title),
                cited_text: None,
            });
        }
        assert_eq!(
            sources.take(false).unwrap(),
            "sources:\n  [1] A · https://a.dev/1\n  [2] https://b.dev"
        );
        assert_eq!(sources.take(false), None);
        for n in 0..MAX_SOURCES + 2 {
            sources.add(&Citation {
                page: page(&format!("https://x.dev/{n}"), ""),
                cited_text: None,
            });
        }
        assert!(sources.take(false).unwrap().ends_with("  … 2 more"));
    }
}
