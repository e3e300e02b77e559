//! Transcripts in HTML, for report.html and `cogni sessions export
//! --format html`: each transcript is embedded as compact JSON in a
//! `<script type="application/json">` block beside a collapsed
//! `<details>`, and a small script builds its entries (text only, never
//! markup from the data) when it is opened; one that starts open (a
//! failing attempt) is built on load, with its failure open and marked.
//! A link to `#a<N>` (an attempt) or `#f<N>` (its failure) opens it. The
//! page's load time, scripts included, is left in the `data-render-ms`
//! attribute of `<html>`. Everything is inline: no network, no other file.

use super::{Json, Transcript};

/// Styles of the transcript blocks (the report adds its own).
pub const STYLE: &str = "details.attempt{border:1px solid #ddd;border-radius:6px;margin:6px 0;padding:4px 10px;content-visibility:auto;contain-intrinsic-size:auto 34px}\
details.attempt>summary{cursor:pointer;padding:2px 0}\
details.attempt.st-failed,details.attempt.st-error,details.attempt.st-budget_exceeded{border-color:#e0a0a0}\
.transcript{margin:6px 0 8px 6px;max-width:1000px}\
.transcript pre{white-space:pre-wrap;word-break:break-word;max-height:28em;overflow:auto;background:#f6f6f6;padding:6px;margin:4px 0;font-size:12px}\
.transcript details>summary{cursor:pointer}\
.transcript .step{color:#777;font-size:12px;margin-top:12px;border-top:1px dashed #ddd;padding-top:2px}\
.transcript .msg.assistant pre{background:#eef4ff}\
.transcript .tool>summary,.transcript .check>summary,.transcript .test>summary{font-family:ui-monospace,monospace;font-size:12px}\
.transcript .gist,.transcript .meta{color:#666}\
.transcript .label{color:#777;font-size:11px;margin-top:4px}\
.transcript .note{color:#666;font-size:12px;font-style:italic}\
.transcript .problem>summary,.transcript .problem,.transcript .warning{color:#b00020}\
.transcript .error{color:#fff;background:#c62828;padding:4px 8px;border-radius:4px;white-space:pre-wrap}\
.transcript .outcome.ok{color:#17803d}\
.transcript .plan ul{margin:2px 0;padding-left:20px}.transcript .plan li.completed{color:#17803d}\
.transcript .failure{outline:2px solid #c62828;outline-offset:2px;background:#fff4f4}\
.transcript .failure::before{content:\"failure\";display:inline-block;background:#c62828;color:#fff;font-size:11px;padding:0 6px;margin-right:6px;border-radius:3px}";

/// Builds the transcripts' entries; see the module documentation.
pub const SCRIPT: &str = r#"(function () {
"use strict";
function el(tag, cls, text) {
  var e = document.createElement(tag);
  if (cls) e.className = cls;
  if (text !== undefined && text !== null) e.textContent = text;
  return e;
}
function gist(text, max) {
  text = String(text || "").replace(/\s+/g, " ").trim();
  return text.length > max ? text.slice(0, max) + "\u2026" : text;
}
function folded(cls, head, meta, body) {
  var d = el("details", cls), s = el("summary");
  s.appendChild(el("b", null, head));
  if (meta) s.appendChild(el("span", "meta", " " + meta));
  d.appendChild(s);
  body.forEach(function (n) { if (n) d.appendChild(n); });
  return d;
}
function pre(label, text) {
  var f = document.createDocumentFragment();
  if (label) f.appendChild(el("div", "label", label));
  f.appendChild(el("pre", null, text));
  return f;
}
var MARK = { completed: "\u2713 ", in_progress: "\u25b8 ", pending: "\u25cb " };
function entry(e) {
  switch (e.k) {
  case "user": return folded("msg user", "task", gist(e.text, 140), [pre(null, e.text)]);
  case "assistant": var a = el("div", "msg assistant"); a.appendChild(el("pre", null, e.text)); return a;
  case "step": return el("div", "step", "step " + e.n + (e.tokens ? " \u00b7 " + e.tokens.toLocaleString("en-US") + " tokens" : "") + (e.dur ? " \u00b7 " + e.dur : ""));
  case "tool":
    var status = e.out === undefined ? "no output" : e.code !== undefined ? "exit " + e.code : e.err ? "failed" : "ok";
    return folded("tool" + (e.err ? " problem" : ""), e.name, gist(e.args, 100) + " \u00b7 " + status + (e.dur ? " \u00b7 " + e.dur : ""),
      [pre("arguments", e.args), e.out === undefined ? null : pre("output", e.out)]);
  case "plan":
    var p = el("div", "plan"); p.appendChild(el("b", null, "plan"));
    if (e.text) p.appendChild(el("div", null, e.text));
    var ul = el("ul");
    e.items.forEach(function (it) { ul.appendChild(el("li", it[0], (MARK[it[0]] || "") + it[1])); });
    p.appendChild(ul); return p;
  case "test":
    return folded("test" + (e.passed ? "" : " problem"), "tests " + (e.passed ? "passed" : "failed"),
      (e.summary || e.command) + " \u00b7 " + e.dur,
      [e.failing && e.failing.length ? pre("failing", e.failing.join("\n")) : null, pre("output (end)", e.out)]);
  case "check":
    return folded("check" + (e.passed ? "" : " problem"), (e.passed ? "\u2713 " : "\u2717 ") + "check", e.what + (e.dur ? " \u00b7 " + e.dur : ""),
      [e.out ? pre("output", e.out) : null]);
  case "note": return el("div", "note", e.text);
  case "warning": return el("div", "warning", "warning: " + e.text);
  case "error": return el("div", "error", e.text);
  case "outcome": return el("div", "outcome " + (e.ok ? "ok" : "problem"), "outcome: " + e.outcome + (e.reason ? " (" + e.reason + ")" : ""));
  default: return el("div", "note", JSON.stringify(e));
  }
}
function build(d) {
  if (d.getAttribute("data-built")) return;
  d.setAttribute("data-built", "1");
  var i = d.getAttribute("data-t"), data = document.getElementById("t" + i), box = d.querySelector(".transcript");
  var t = JSON.parse(data.textContent);
  t.entries.forEach(function (e, n) {
    var node = entry(e);
    if (n === t.failure) { node.classList.add("failure"); node.id = "f" + i; if (node.tagName === "DETAILS") node.open = true; }
    box.appendChild(node);
  });
  if (!t.entries.length) box.appendChild(el("div", "note", "(nothing happened)"));
}
document.querySelectorAll("details.attempt").forEach(function (d) {
  if (d.open) build(d);
  d.addEventListener("toggle", function () {
    if (!d.open) return;
    var fresh = !d.getAttribute("data-built");
    build(d);
    var f = document.getElementById("f" + d.getAttribute("data-t"));
    if (fresh && f) f.scrollIntoView({ block: "center" });
  });
});
function reveal() {
  var m = /^#([af])(\d+)$/.exec(location.hash);
  var d = m && document.getElementById("a" + m[2]);
  if (!d) return;
  d.open = true;
  build(d);
  var target = document.getElementById(m[1] + m[2]);
  if (target) target.scrollIntoView({ block: "center" });
}
window.addEventListener("hashchange", reveal);
reveal();
document.documentElement.setAttribute("data-render-ms", String(Math.round(performance.now())));
})();"#;

/// `text` for HTML (and XML 1.0) text and attributes: escaped, and
/// without the control characters XML cannot hold.
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            '\t' | '\n' | '\r' => out.push(c),
            c if c < ' ' || c == '\u{FFFE}' || c == '\u{FFFF}' => out.push('\u{FFFD}'),
            c => out.push(c),
        }
    }
    out
}

/// The transcript as JSON that is safe inside a `<script>` element.
pub fn data(t: &Json) -> String {
    t.as_str().replace('<', "\\u003c")
}

/// One transcript: a `<details>` (id `a<index>`; `class` adds to
/// `attempt`) whose summary is `summary_html`, built when opened; `open`
/// builds it on load. Its failure entry gets the id `f<index>`.
pub fn block(index: usize, class: &str, summary_html: &str, open: bool, t: &Json) -> String {
    format!(
        "<details id=\"a{index}\" class=\"attempt {}\" data-t=\"{index}\"{}><summary>{summary_html}</summary><div class=\"transcript\"></div></details>\n<script type=\"application/json\" id=\"t{index}\">{}</script>\n",
        escape(class),
        if open { " open" } else { "" },
        data(t)
    )
}

/// A whole page holding one transcript, open.
pub fn page(title: &str, header_html: &str, t: &Transcript) -> String {
    format!(
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>{}</title><style>body{{font:14px/1.4 system-ui,sans-serif;margin:24px;color:#222}}h1{{font-size:20px}}{STYLE}</style></head><body>\n<h1>{}</h1>\n{header_html}\n{}<script>{SCRIPT}</script>\n</body></html>\n",
        escape(title),
        escape(title),
        block(0, "", "transcript", true, &Json::of(t))
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Entry;

    #[test]
    fn data_cannot_close_its_script_element() {
        let t = Transcript {
            entries: vec![Entry::Assistant {
                text: "</script><script>alert(1)</script>".into(),
            }],
            failure: None,
        };
        let json = data(&Json::of(&t));
        assert!(!json.contains("</script"), "{json}");
        assert_eq!(
            serde_json::from_str::<Transcript>(&json).unwrap(),
            t,
            "\\u003c reads back as <"
        );
    }

    #[test]
    fn a_page_is_self_contained() {
        let html = page("session x", "<p>header</p>", &Transcript::default());
        assert!(html.contains("<details id=\"a0\" class=\"attempt \" data-t=\"0\" open>"));
        for remote in ["src=", "href=", "@import", "url("] {
            assert!(!html.contains(remote), "{remote}");
        }
    }

    #[test]
    fn text_is_escaped_and_cleaned() {
        assert_eq!(
            escape("a<b & \"c\" 'd'\u{1b}[0m\n"),
            "a&lt;b &amp; &quot;c&quot; &apos;d&apos;\u{FFFD}[0m\n"
        );
    }
}
