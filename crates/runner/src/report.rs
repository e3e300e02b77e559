//! The files a run leaves: `results.json`, `junit.xml` (one testcase per
//! attempt), `transcripts.jsonl` (what each attempt's agent did) and
//! `report.html` (one self-contained page: summary, table, bar charts of
//! cost and time per task as inline SVG, and each attempt's transcript).

use super::results::{AttemptResult, RunResults, Status, TaskResult};
use cogni_tools::fs::write_atomic;
pub use cogni_transcript::format_ms;
use cogni_transcript::html::{self as transcript_html, escape as xml};
use cogni_transcript::{Json, Line};
use std::borrow::Cow;
use std::collections::HashMap;
use std::fmt::Write as _;
use std::io;
use std::path::{Path, PathBuf};

/// The machine-readable results (docs/results.md), in the output directory.
pub const RESULTS_FILE: &str = "results.json";
/// JUnit XML for CI systems: one `testcase` per attempt.
pub const JUNIT_FILE: &str = "junit.xml";
/// The self-contained HTML report for people.
pub const HTML_FILE: &str = "report.html";
/// One line per attempt that ran: its transcript.
pub const TRANSCRIPTS_FILE: &str = "transcripts.jsonl";

/// Write the four files into `dir` (created when missing), each atomically.
pub fn write_all(dir: &Path, results: &RunResults) -> io::Result<Vec<PathBuf>> {
    std::fs::create_dir_all(dir)?;
    type Render = fn(&RunResults) -> io::Result<Vec<u8>>;
    let files: [(&str, Render); 4] = [
        (RESULTS_FILE, |r| {
            serde_json::to_vec_pretty(r).map_err(io::Error::other)
        }),
        (JUNIT_FILE, |r| Ok(junit(r).into_bytes())),
        (TRANSCRIPTS_FILE, transcripts),
        (HTML_FILE, |r| Ok(html(r).into_bytes())),
    ];
    // Each file is rendered and synced on a thread of its own: a merge of
    // thousands of attempts writes tens of MiB, and the fsyncs overlap.
    std::thread::scope(|scope| {
        let writers: Vec<_> = files
            .into_iter()
            .map(|(name, render)| {
                scope.spawn(move || {
                    let path = dir.join(name);
                    write_atomic(&path, &render(results)?)?;
                    Ok(path)
                })
            })
            .collect();
        writers
            .into_iter()
            .map(|w| w.join().unwrap_or_else(|p| std::panic::resume_unwind(p)))
            .collect()
    })
}

/// `$0.0123`, or `-` when unknown.
pub fn format_cost(cost: Option<f64>) -> String {
    match cost {
        Some(c) if c >= 1.0 => format!("${c:.2}"),
        Some(c) => format!("${c:.4}"),
        None => "-".into(),
    }
}

/// One line per attempt that has a transcript.
fn transcripts(results: &RunResults) -> io::Result<Vec<u8>> {
    let mut out = Vec::new();
    for task in &results.tasks {
        for a in &task.attempts {
            if let Some(transcript) = &a.transcript {
                let line = Line {
                    task: Cow::Borrowed(&task.id),
                    agent: Cow::Borrowed(&task.agent),
                    attempt: a.attempt,
                    transcript: transcript.as_raw(),
                };
                serde_json::to_writer(&mut out, &line).map_err(io::Error::other)?;
                out.push(b'\n');
            }
        }
    }
    Ok(out)
}

/// Give the attempts of `results` their transcripts from the
/// transcripts.jsonl in `dir` (none when the file is missing: an older
/// run); a line that cannot be read is an error naming it.
pub fn attach_transcripts(dir: &Path, results: &mut RunResults) -> Result<(), String> {
    let path = dir.join(TRANSCRIPTS_FILE);
    let text = match std::fs::read_to_string(&path) {
        Ok(text) => text,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(format!("cannot read {}: {e}", path.display())),
    };
    let mut by_key: HashMap<(String, String, u32), Json> = HashMap::new();
    for (n, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let line: Line = serde_json::from_str(line)
            .map_err(|e| format!("{}:{}: not a transcript line: {e}", path.display(), n + 1))?;
        by_key.insert(
            (
                line.task.into_owned(),
                line.agent.into_owned(),
                line.attempt,
            ),
            Json::from(line.transcript),
        );
    }
    for task in &mut results.tasks {
        for a in &mut task.attempts {
            let key = (task.id.clone(), task.agent.clone(), a.attempt);
            if let Some(t) = by_key.remove(&key) {
                a.transcript = Some(t);
            }
        }
    }
    Ok(())
}

/// `1,234,567`.
pub fn format_count(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// Test case name of an attempt: the task id, and `#n` when it repeats.
fn case_name(task: &TaskResult, attempt: &AttemptResult) -> String {
    if task.attempts.len() > 1 {
        format!("{} #{}", task.id, attempt.attempt)
    } else {
        task.id.clone()
    }
}

// ---------------------------------------------------------------------------
// JUnit
// ---------------------------------------------------------------------------

/// JUnit XML: one testsuite for the run, one testcase per attempt;
/// `failure` for failed checks, steps and budgets, `error` for setup,
/// provider and interrupt errors, `skipped` for attempts not run.
pub fn junit(results: &RunResults) -> String {
    let s = &results.summary;
    let failures = s.failed + s.budget_exceeded;
    let secs = |ms: u64| format!("{:.3}", ms as f64 / 1000.0);
    let mut x = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    let _ = writeln!(
        x,
        "<testsuites name=\"cogni\" tests=\"{}\" failures=\"{failures}\" errors=\"{}\" skipped=\"{}\" time=\"{}\">",
        s.attempts,
        s.errors,
        s.skipped,
        secs(s.totals.wall_ms)
    );
    let _ = writeln!(
        x,
        "  <testsuite name=\"{}\" tests=\"{}\" failures=\"{failures}\" errors=\"{}\" skipped=\"{}\" time=\"{}\" timestamp=\"{}\">",
        xml(&format!("cogni {}", results.tasks_file)),
        s.attempts,
        s.errors,
        s.skipped,
        secs(s.totals.wall_ms),
        xml(&results.started_at)
    );
    x.push_str("    <properties>\n");
    let mut property = |name: &str, value: &str| {
        let _ = writeln!(
            x,
            "      <property name=\"{}\" value=\"{}\"/>",
            xml(name),
            xml(value)
        );
    };
    property("run_id", &results.run_id);
    property("cogni_version", &results.cogni_version);
    if let Some(repo) = &results.repository {
        property("commit", &repo.commit);
    }
    x.push_str("    </properties>\n");
    for task in &results.tasks {
        for a in &task.attempts {
            let _ = write!(
                x,
                "    <testcase name=\"{}\" classname=\"cogni.{}\" time=\"{}\"",
                xml(&case_name(task, a)),
                xml(&task.agent),
                secs(a.wall_ms)
            );
            let reason = a.failure_reason.map_or(a.status.as_str(), |r| r.as_str());
            let message = a.error.as_deref().unwrap_or("");
            let element = match a.status {
                Status::Passed => None,
                Status::Failed | Status::BudgetExceeded => Some("failure"),
                Status::Error => Some("error"),
                Status::Skipped => {
                    let _ = writeln!(
                        x,
                        ">\n      <skipped message=\"{}\"/>\n    </testcase>",
                        xml(message)
                    );
                    continue;
                }
            };
            x.push_str(">\n");
            if let Some(element) = element {
                let _ = writeln!(
                    x,
                    "      <{element} type=\"{}\" message=\"{}\">{}</{element}>",
                    xml(reason),
                    xml(message),
                    xml(&failure_details(a))
                );
            }
            let _ = writeln!(
                x,
                "      <system-out>{}</system-out>",
                xml(&attempt_summary(a))
            );
            x.push_str("    </testcase>\n");
        }
    }
    x.push_str("  </testsuite>\n</testsuites>\n");
    x
}

/// The failed checks with their output, or the error.
fn failure_details(a: &AttemptResult) -> String {
    let mut out = String::new();
    if let Some(error) = &a.error {
        out.push_str(error);
        out.push('\n');
    }
    for check in a.checks.iter().filter(|c| !c.passed) {
        let _ = write!(
            out,
            "\nFAILED {}\n{}\n",
            check.description, check.output_tail
        );
    }
    out
}

fn attempt_summary(a: &AttemptResult) -> String {
    let mut text = format!(
        "tokens: {} in, {} out ({} cached); cost: {}; steps: {}; tool calls: {}; agent: {}\nfinal answer:\n{}",
        a.tokens.input,
        a.tokens.output,
        a.tokens.cached_input,
        format_cost(a.cost_usd),
        a.steps,
        a.tool_call_count(),
        format_ms(a.agent_ms),
        a.final_answer
    );
    if let Some(review) = &a.review {
        let _ = write!(
            text,
            "\nreview: {} ({})",
            review.verdict.as_str(),
            crate::review::markdown::tally(review)
        );
        for f in &review.findings {
            let _ = write!(
                text,
                "\n- {} {}: {}",
                f.priority_name(),
                f.location(),
                f.title
            );
        }
    }
    text
}

/// The findings of the review attempts, one table each.
fn findings_html(h: &mut String, attempts: &[(usize, &TaskResult, &AttemptResult)]) {
    let reviews: Vec<_> = attempts
        .iter()
        .filter_map(|(_, t, a)| a.review.as_ref().map(|r| (t, a, r)))
        .collect();
    if reviews.is_empty() {
        return;
    }
    h.push_str("<h2>Review findings</h2>\n");
    for (t, a, review) in reviews {
        let _ = writeln!(
            h,
            "<p><b>{}@{}</b> (attempt {}): {} · {}</p>",
            esc(&case_name(t, a)),
            esc(&t.agent),
            a.attempt,
            esc(review.verdict.as_str()),
            esc(&crate::review::markdown::tally(review))
        );
        if review.findings.is_empty() {
            continue;
        }
        h.push_str("<table><tr><th>priority</th><th>where</th><th>finding</th><th class=\"n\">confidence</th></tr>\n");
        for f in &review.findings {
            let _ = writeln!(
                h,
                "<tr><td>{}</td><td>{}</td><td><details><summary>{}</summary><pre>{}</pre></details></td><td class=\"n\">{:.2}</td></tr>",
                esc(&f.priority_name()),
                esc(&f.location()),
                esc(&f.title),
                esc(&f.body),
                f.confidence
            );
        }
        h.push_str("</table>\n");
    }
}

// ---------------------------------------------------------------------------
// HTML
// ---------------------------------------------------------------------------

const STYLE: &str = "body{font:14px/1.4 system-ui,sans-serif;margin:24px;color:#222}\
h1{font-size:20px}h2{font-size:16px;margin-top:28px}\
table{border-collapse:collapse}td,th{padding:4px 10px;border-bottom:1px solid #ddd;text-align:left}\
td.n,th.n{text-align:right;font-variant-numeric:tabular-nums}\
.passed{color:#17803d}.failed,.error{color:#c62828}.budget_exceeded{color:#b26a00}.skipped{color:#777}\
.cards{display:flex;gap:12px;flex-wrap:wrap}.card{border:1px solid #ddd;border-radius:6px;padding:8px 14px}\
.card b{display:block;font-size:18px}.charts{display:flex;gap:32px;flex-wrap:wrap}\
pre{white-space:pre-wrap;max-width:900px;background:#f6f6f6;padding:6px;margin:4px 0}";

/// One self-contained HTML page (inline styles and script, no network).
pub fn html(results: &RunResults) -> String {
    let s = &results.summary;
    let mut h = String::new();
    let _ = write!(
        h,
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>cogni run {}</title><style>{STYLE}{}</style></head><body>\n",
        esc(&results.run_id),
        transcript_html::STYLE
    );
    let _ = writeln!(h, "<h1>cogni run {}</h1>", esc(&results.run_id));
    let repo = results.repository.as_ref().map_or(String::new(), |r| {
        format!(
            " · {} {}{}{}",
            esc(&r.name),
            esc(r.commit.get(..12).unwrap_or(&r.commit)),
            r.branch
                .as_deref()
                .map_or(String::new(), |b| format!(" ({})", esc(b))),
            if r.dirty { " dirty" } else { "" }
        )
    });
    let _ = writeln!(
        h,
        "<p>{} · {} → {} · cogni {}{repo}</p>",
        esc(&results.tasks_file),
        esc(&results.started_at),
        esc(&results.finished_at),
        esc(&results.cogni_version)
    );
    h.push_str("<div class=\"cards\">");
    let cards = [
        ("passed", s.passed.to_string()),
        ("failed", s.failed.to_string()),
        ("over budget", s.budget_exceeded.to_string()),
        ("errors", s.errors.to_string()),
        ("skipped", s.skipped.to_string()),
        ("pass rate", format!("{:.1}%", s.pass_rate * 100.0)),
        ("cost", format_cost(s.totals.cost_usd)),
        ("tokens", format_count(s.totals.tokens.total())),
        ("wall time", format_ms(s.totals.wall_ms)),
    ];
    for (label, value) in cards {
        let _ = write!(h, "<div class=\"card\"><b>{}</b>{label}</div>", esc(&value));
    }
    h.push_str("</div>\n<h2>Cost and time per task</h2>\n<div class=\"charts\">");
    let per_task: Vec<(String, f64, u64)> = results
        .tasks
        .iter()
        .map(|t| {
            let cost: f64 = t.attempts.iter().filter_map(|a| a.cost_usd).sum();
            let ms: u64 = t.attempts.iter().map(|a| a.wall_ms).sum();
            (format!("{}@{}", t.id, t.agent), cost, ms)
        })
        .collect();
    let costs: Vec<(&str, f64, String)> = per_task
        .iter()
        .map(|(n, c, _)| (n.as_str(), *c, format_cost(Some(*c))))
        .collect();
    let times: Vec<(&str, f64, String)> = per_task
        .iter()
        .map(|(n, _, ms)| (n.as_str(), *ms as f64, format_ms(*ms)))
        .collect();
    h.push_str(&bars("cost (USD, all attempts)", &costs, "#3b6fd1"));
    h.push_str(&bars("time (all attempts)", &times, "#8a5cc2"));
    h.push_str("</div>\n");
    // Every attempt with its index: the anchors of its transcript.
    let attempts: Vec<(usize, &TaskResult, &AttemptResult)> = results
        .tasks
        .iter()
        .flat_map(|t| t.attempts.iter().map(move |a| (t, a)))
        .enumerate()
        .map(|(i, (t, a))| (i, t, a))
        .collect();
    attempt_table(&mut h, &attempts);
    findings_html(&mut h, &attempts);
    let failed = |a: &AttemptResult| !matches!(a.status, Status::Passed | Status::Skipped);
    if attempts.iter().any(|(_, _, a)| failed(a)) {
        h.push_str("<h2>What went wrong</h2>\n");
        for (i, t, a) in attempts.iter().filter(|(_, _, a)| failed(a)) {
            let link = if a.transcript.is_some() {
                format!(" <a href=\"#f{i}\">where it failed</a>")
            } else {
                String::new()
            };
            let _ = writeln!(
                h,
                "<p><b>{}@{}</b> (attempt {}):{link}</p><pre>{}</pre>",
                esc(&case_name(t, a)),
                esc(&t.agent),
                a.attempt,
                esc(&failure_details(a))
            );
        }
    }
    if attempts.iter().any(|(_, _, a)| a.transcript.is_some()) {
        h.push_str("<h2>Transcripts</h2>\n<p class=\"skipped\">Open an attempt to see what its agent did; failing attempts are open at their failure.</p>\n");
        for (i, t, a) in &attempts {
            let Some(transcript) = &a.transcript else {
                continue;
            };
            let summary = format!(
                "<b>{}@{}</b> <span class=\"{st}\">{st}</span>{} · {} · {} steps · {} tool calls",
                esc(&case_name(t, a)),
                esc(&t.agent),
                a.failure_reason
                    .map_or(String::new(), |r| format!(" ({})", r.as_str())),
                esc(&format_ms(a.wall_ms)),
                a.steps,
                a.tool_call_count(),
                st = a.status.as_str(),
            );
            h.push_str(&transcript_html::block(
                *i,
                &format!("st-{}", a.status.as_str()),
                &summary,
                failed(a),
                transcript,
            ));
        }
        let _ = writeln!(h, "<script>{}</script>", transcript_html::SCRIPT);
    }
    h.push_str("</body></html>\n");
    h
}

/// Rows of the attempts table shown at once; the rest are one click
/// away (a long table is slow to lay out and to read).
const TABLE_ROWS: usize = 100;

/// The table of attempts, each linking to its transcript.
fn attempt_table(h: &mut String, attempts: &[(usize, &TaskResult, &AttemptResult)]) {
    const HEAD: &str = "<table><tr><th>task</th><th>agent</th><th class=\"n\">#</th><th>status</th><th>reason</th><th class=\"n\">cost</th><th class=\"n\">time</th><th class=\"n\">tokens</th><th class=\"n\">steps</th><th class=\"n\">tool calls</th><th></th></tr>\n";
    h.push_str("<h2>Attempts</h2>\n");
    h.push_str(HEAD);
    for (n, (i, t, a)) in attempts.iter().enumerate() {
        if n == TABLE_ROWS {
            let _ = write!(
                h,
                "</table>\n<details class=\"more\"><summary>{} more attempts</summary>\n{HEAD}",
                attempts.len() - TABLE_ROWS
            );
        }
        let link = if a.transcript.is_some() {
            format!("<a href=\"#a{i}\">transcript</a>")
        } else {
            String::new()
        };
        let _ = writeln!(
            h,
            "<tr><td>{}</td><td>{}</td><td class=\"n\">{}</td><td class=\"{st}\">{st}</td><td>{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td>{link}</td></tr>",
            esc(&t.id),
            esc(&t.agent),
            a.attempt,
            a.failure_reason.map_or("", |r| r.as_str()),
            esc(&format_cost(a.cost_usd)),
            esc(&format_ms(a.wall_ms)),
            format_count(a.tokens.total()),
            a.steps,
            a.tool_call_count(),
            st = a.status.as_str(),
        );
    }
    h.push_str("</table>\n");
    if attempts.len() > TABLE_ROWS {
        h.push_str("</details>\n");
    }
}

/// Most bars in a chart: with more tasks, the highest values.
const MAX_BARS: usize = 25;

/// A horizontal bar chart as inline SVG.
fn bars(title: &str, rows: &[(&str, f64, String)], color: &str) -> String {
    const LABEL_W: f64 = 180.0;
    const BAR_W: f64 = 260.0;
    const ROW_H: f64 = 22.0;
    let mut top: Vec<&(&str, f64, String)>;
    let (rows, title) = if rows.len() > MAX_BARS {
        top = rows.iter().collect();
        top.sort_by(|a, b| b.1.total_cmp(&a.1));
        top.truncate(MAX_BARS);
        let title = format!("{title}: the {MAX_BARS} highest of {}", rows.len());
        (top.into_iter().cloned().collect::<Vec<_>>(), title)
    } else {
        (rows.to_vec(), title.to_string())
    };
    let title = title.as_str();
    let max = rows.iter().map(|r| r.1).fold(0.0_f64, f64::max);
    let height = ROW_H * rows.len() as f64 + 30.0;
    let width = LABEL_W + BAR_W + 90.0;
    let mut svg = format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{width}\" height=\"{height}\" role=\"img\" aria-label=\"{t}\"><text x=\"0\" y=\"14\" font-size=\"13\" font-weight=\"bold\">{t}</text>",
        t = esc(title)
    );
    for (i, (name, value, label)) in rows.iter().enumerate() {
        let y = 24.0 + ROW_H * i as f64;
        let w = if max > 0.0 { value / max * BAR_W } else { 0.0 };
        let shown: String = name.chars().take(26).collect();
        let _ = write!(
            svg,
            "<text x=\"0\" y=\"{ty}\" font-size=\"12\">{}</text><rect x=\"{LABEL_W}\" y=\"{y}\" width=\"{w:.1}\" height=\"{bh}\" fill=\"{color}\"/><text x=\"{lx:.1}\" y=\"{ty}\" font-size=\"12\">{}</text>",
            esc(&shown),
            esc(label),
            ty = y + 13.0,
            bh = ROW_H - 6.0,
            lx = LABEL_W + w + 6.0,
        );
    }
    svg.push_str("</svg>");
    svg
}

fn esc(text: &str) -> String {
    xml(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_are_formatted_for_people() {
        assert_eq!(format_count(0), "0");
        assert_eq!(format_count(1234567), "1,234,567");
        assert_eq!(format_count(999), "999");
        assert_eq!(format_cost(Some(0.01234)), "$0.0123");
        assert_eq!(format_cost(Some(12.5)), "$12.50");
        assert_eq!(format_cost(None), "-");
        assert_eq!(format_ms(850), "850 ms");
        assert_eq!(format_ms(12_340), "12.3 s");
        assert_eq!(format_ms(245_000), "4 min 5 s");
    }
}
