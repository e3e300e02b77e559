//! A page's HTML as Markdown: html5ever parses it (the HTML standard's
//! algorithm, fed a piece at a time so that a page built to parse slowly
//! is cut off at a deadline), the tree is made safe to walk (at most
//! [`MAX_DEPTH`] levels deep, the deeper text kept) and its links
//! absolute, and htmd (a turndown.js port) writes the Markdown.

use crate::truncate::floor_char_boundary;
use htmd::element_handler::{HandlerResult, Handlers};
use htmd::{Element, HtmlToMarkdown};
use html5ever::tendril::{StrTendril, TendrilSink};
use html5ever::{local_name, ns, ParseOpts};
use markup5ever_rcdom::{Handle, Node, NodeData, RcDom};
use std::cell::RefCell;
use std::rc::Rc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;
use url::Url;

/// Levels of the tree htmd walks (it recurses once per level); deeper
/// elements become their text.
pub const MAX_DEPTH: usize = 256;

/// Bytes of HTML fed to the parser at a time, between two looks at the
/// deadline.
const PIECE_BYTES: usize = 16 * 1024;

/// What the page says, as Markdown.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Page {
    /// The text of its `<title>`, whitespace collapsed; `None` when it has
    /// none or it is empty.
    pub title: Option<String>,
    /// Its body as Markdown.
    pub markdown: String,
    /// Bytes of the HTML parsed before the deadline (all of it unless the
    /// page took too long to parse).
    pub parsed: usize,
}

/// `html` (of the page at `base`) as Markdown, parsed until `deadline`:
/// what was parsed by then is converted. `None` when `cancel` is set
/// meanwhile (nobody waits for the answer).
pub fn to_markdown(html: &str, base: &Url, deadline: Instant, cancel: &AtomicBool) -> Option<Page> {
    let mut parser = html5ever::parse_document(RcDom::default(), ParseOpts::default());
    let mut parsed = 0;
    while parsed < html.len() && Instant::now() < deadline {
        if cancel.load(Ordering::Relaxed) {
            return None;
        }
        let end = floor_char_boundary(html, parsed + PIECE_BYTES);
        parser.process(StrTendril::from_slice(&html[parsed..end]));
        parsed = end;
    }
    let dom = parser.finish();
    let title = prepare(&dom.document, base);
    let markdown = converter().tree_to_markdown(&dom.document);
    Some(Page {
        title,
        markdown,
        parsed,
    })
}

/// The converter: what is not text for a reader (scripts, styles, the
/// head and titles, embedded objects, form controls) left out, and images inlined as
/// `data:` URLs reduced to their alt text.
fn converter() -> HtmlToMarkdown {
    HtmlToMarkdown::builder()
        .skip_tags(vec![
            "head", "title", "script", "style", "noscript", "template", "svg", "math", "canvas",
            "iframe", "object", "embed", "select", "button",
        ])
        .add_handler(vec!["img"], inline_image)
        .build()
}

/// An image whose source is a `data:` URL (kilobytes of base64) as
/// `![alt]`; any other as htmd writes it.
fn inline_image(handlers: &dyn Handlers, element: Element) -> Option<HandlerResult> {
    let attr = |name: &str| {
        element
            .attrs
            .iter()
            .find(|a| &*a.name.local == name)
            .map(|a| a.value.to_string())
    };
    if attr("src").is_some_and(|src| src.trim_start().starts_with("data:")) {
        let alt = attr("alt").unwrap_or_default();
        return Some(format!("![{}]", alt.trim()).into());
    }
    handlers.fallback(element)
}

/// Walk the tree once, without recursion: the title, links and image
/// sources made absolute against `base`, and elements at [`MAX_DEPTH`]
/// replaced by their text.
fn prepare(document: &Handle, base: &Url) -> Option<String> {
    let mut title = None;
    let mut stack = vec![(document.clone(), 0usize)];
    while let Some((node, depth)) = stack.pop() {
        if let NodeData::Element { name, attrs, .. } = &node.data {
            match name.local {
                local_name!("title") if title.is_none() && name.ns == ns!(html) => {
                    title = Some(collapse(&text_of(&node)));
                }
                local_name!("a") => absolute(&mut attrs.borrow_mut(), "href", base),
                local_name!("img") => absolute(&mut attrs.borrow_mut(), "src", base),
                _ => {}
            }
            if depth >= MAX_DEPTH {
                flatten(&node);
                continue;
            }
        }
        // In document order: the first child is taken next.
        let children = node.children.borrow();
        stack.extend(children.iter().rev().map(|c| (c.clone(), depth + 1)));
    }
    title.filter(|t| !t.is_empty())
}

/// The attribute `name` as an absolute URL against `base` (left as it is
/// when it does not parse).
fn absolute(attrs: &mut [html5ever::Attribute], name: &str, base: &Url) {
    for attr in attrs.iter_mut().filter(|a| &*a.name.local == name) {
        if let Ok(url) = base.join(attr.value.trim()) {
            attr.value = StrTendril::from(url.as_str());
        }
    }
}

/// `node`'s children replaced by one text node of their text.
fn flatten(node: &Handle) {
    let text = text_of(node);
    let child = Node::new(NodeData::Text {
        contents: RefCell::new(StrTendril::from(text)),
    });
    child.parent.set(Some(Rc::downgrade(node)));
    // The old children are dropped here; rcdom drops a deep tree without
    // recursion.
    *node.children.borrow_mut() = vec![child];
}

/// The text below `node`, in document order, scripts and styles left out.
fn text_of(node: &Handle) -> String {
    let mut text = String::new();
    let mut stack = vec![node.clone()];
    while let Some(node) = stack.pop() {
        match &node.data {
            NodeData::Text { contents } => text.push_str(&contents.borrow()),
            NodeData::Element { name, .. }
                if matches!(name.local, local_name!("script") | local_name!("style")) => {}
            _ => stack.extend(node.children.borrow().iter().rev().cloned()),
        }
    }
    text
}

/// `text` with each run of whitespace as one space, trimmed.
fn collapse(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn convert(html: &str) -> Page {
        let base = Url::parse("https://example.com/docs/page.html").unwrap();
        let deadline = Instant::now() + Duration::from_secs(30);
        to_markdown(html, &base, deadline, &AtomicBool::new(false)).unwrap()
    }

    #[test]
    fn a_page_becomes_markdown_with_its_title_and_absolute_links() {
        let page = convert(
            "<!doctype html><html><head><title>\n  The  Guide </title>\
             <style>p{color:red}</style><script>alert('x')</script></head>\
             <body><h1>Install</h1><p>Run <code>make</code>, see <a href=\"../faq.html#q\">the FAQ</a>.</p>\
             <ul><li>one</li><li>two</li></ul><img alt=\"logo\" src=\"data:image/png;base64,AAAA\">\
             <img alt=\"chart\" src=\"/img/c.png\"><script>var hidden = 1;</script>\
             <title>Not the title</title><svg><title>Nor this</title></svg></body></html>",
        );
        assert_eq!(page.title.as_deref(), Some("The Guide"));
        let md = &page.markdown;
        assert!(md.starts_with("# Install"), "{md}");
        assert!(
            md.contains("Run `make`, see [the FAQ](https://example.com/faq.html#q)."),
            "{md}"
        );
        assert!(md.contains("*   one") || md.contains("- one"), "{md}");
        assert!(md.contains("![logo]"), "{md}");
        assert!(!md.contains("base64"), "{md}");
        assert!(
            md.contains("![chart](https://example.com/img/c.png)"),
            "{md}"
        );
        for hidden in [
            "alert",
            "hidden",
            "color:red",
            "The Guide",
            "Not the",
            "Nor this",
        ] {
            assert!(!md.contains(hidden), "{hidden} in {md}");
        }
    }

    #[test]
    fn a_page_nested_deeper_than_the_walk_goes_keeps_its_text() {
        let levels = 1000;
        let html = format!(
            "<p>top</p>{}deep text{}<p>after</p>",
            "<div><ul><li><b><a href=x>".repeat(levels),
            "</a></b></li></ul></div>".repeat(levels)
        );
        // On a thread with the stack web_fetch gives the conversion.
        let page = std::thread::Builder::new()
            .stack_size(super::super::CONVERT_STACK_BYTES)
            .spawn(move || convert(&html))
            .unwrap()
            .join()
            .unwrap();
        for text in ["top", "deep text", "after"] {
            assert!(page.markdown.contains(text), "{text}: {}", page.markdown);
        }
    }

    #[test]
    fn a_page_built_to_parse_slowly_is_cut_at_the_deadline() {
        // Each unclosed <div> makes the parser look through all the open
        // ones: parsing this whole takes minutes.
        let html = format!("<p>first</p>{}", "<div>".repeat(200_000));
        let base = Url::parse("http://h/").unwrap();
        let start = Instant::now();
        let deadline = start + Duration::from_millis(300);
        let page = to_markdown(&html, &base, deadline, &AtomicBool::new(false)).unwrap();
        assert!(
            page.parsed < html.len(),
            "{} of {}",
            page.parsed,
            html.len()
        );
        assert!(page.markdown.contains("first"), "{}", page.markdown);
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "{:?}",
            start.elapsed()
        );
        let cancelled = AtomicBool::new(true);
        let later = Instant::now() + Duration::from_secs(30);
        assert_eq!(to_markdown(&html, &base, later, &cancelled), None);
    }
}
