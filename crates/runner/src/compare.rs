//! `cogni compare A B`: two runs side by side, per task: pass/fail changes
//! and the change in tokens, cost and time per attempt. A task that passed
//! every attempt in A and not in B is a regression.

use super::report::{format_cost, format_count, RESULTS_FILE};
use super::results::{RunResults, Status, TaskResult};
use std::path::Path;

/// Read a `results.json`, or the one in a run directory.
pub fn load(path: &Path) -> Result<RunResults, String> {
    let file = if path.is_dir() {
        path.join(RESULTS_FILE)
    } else {
        path.to_path_buf()
    };
    let text = std::fs::read_to_string(&file)
        .map_err(|e| format!("cannot read {}: {e}", file.display()))?;
    let results: RunResults = serde_json::from_str(&text)
        .map_err(|e| format!("{}: not a cogni results file: {e}", file.display()))?;
    if results.schema_version != super::results::SCHEMA_VERSION {
        return Err(format!(
            "{}: results schema version {} (this cogni reads version {})",
            file.display(),
            results.schema_version,
            super::results::SCHEMA_VERSION
        ));
    }
    Ok(results)
}

/// One task (`id@agent`) in either run.
#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    /// `id@agent`.
    pub task: String,
    /// The task in run A; `None` when A does not have it.
    pub a: Option<Side>,
    /// The task in run B; `None` when B does not have it.
    pub b: Option<Side>,
}

/// A task in one run: attempts that passed, and means per attempt that ran.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Side {
    /// Attempts that passed.
    pub passed: usize,
    /// Attempts that ran (not skipped).
    pub ran: usize,
    /// Mean input plus output tokens.
    pub tokens: f64,
    /// Mean cost in USD over the attempts that ran; `None` when none had
    /// a known price.
    pub cost_usd: Option<f64>,
    /// Mean wall time, in milliseconds.
    pub wall_ms: f64,
}

impl Side {
    fn of(task: &TaskResult) -> Side {
        let ran: Vec<_> = task
            .attempts
            .iter()
            .filter(|a| a.status != Status::Skipped)
            .collect();
        let n = ran.len().max(1) as f64;
        let costs: Vec<f64> = ran.iter().filter_map(|a| a.cost_usd).collect();
        Side {
            passed: task.passed(),
            ran: ran.len(),
            tokens: ran.iter().map(|a| a.tokens.total() as f64).sum::<f64>() / n,
            cost_usd: (!costs.is_empty()).then(|| costs.iter().sum::<f64>() / n),
            wall_ms: ran.iter().map(|a| a.wall_ms as f64).sum::<f64>() / n,
        }
    }

    /// Every attempt that ran passed.
    pub fn all_passed(&self) -> bool {
        self.ran > 0 && self.passed == self.ran
    }
}

impl Row {
    /// Passed in A, not in B.
    pub fn is_regression(&self) -> bool {
        matches!((&self.a, &self.b), (Some(a), Some(b)) if a.all_passed() && !b.all_passed())
    }

    /// The change from A to B for the table: `REGRESSED`, `fixed`,
    /// `still failing`, `only in A`, `only in B`, or empty when both
    /// passed.
    pub fn change(&self) -> &'static str {
        match (&self.a, &self.b) {
            (Some(_), None) => "only in A",
            (None, Some(_)) => "only in B",
            (Some(a), Some(b)) => match (a.all_passed(), b.all_passed()) {
                (true, false) => "REGRESSED",
                (false, true) => "fixed",
                (true, true) => "",
                (false, false) => "still failing",
            },
            (None, None) => "",
        }
    }
}

/// Two runs side by side (`cogni compare A B`).
#[derive(Debug, Clone, PartialEq)]
pub struct Comparison {
    /// One row per task, in [`compare`]'s order.
    pub rows: Vec<Row>,
}

/// Tasks of A in A's order, then tasks only in B.
pub fn compare(a: &RunResults, b: &RunResults) -> Comparison {
    let key = |t: &TaskResult| format!("{}@{}", t.id, t.agent);
    let mut rows: Vec<Row> = a
        .tasks
        .iter()
        .map(|t| Row {
            task: key(t),
            a: Some(Side::of(t)),
            b: b.tasks.iter().find(|u| key(u) == key(t)).map(Side::of),
        })
        .collect();
    rows.extend(
        b.tasks
            .iter()
            .filter(|u| !a.tasks.iter().any(|t| key(t) == key(u)))
            .map(|u| Row {
                task: key(u),
                a: None,
                b: Some(Side::of(u)),
            }),
    );
    Comparison { rows }
}

impl Comparison {
    /// Tasks that passed in A and not in B (a non-zero count exits 1).
    pub fn regressions(&self) -> usize {
        self.rows.iter().filter(|r| r.is_regression()).count()
    }

    /// A plain-text table, one task per line, and a closing line.
    pub fn render(&self) -> String {
        let header = ["task", "A", "B", "change", "tokens Δ", "cost Δ", "time Δ"];
        let mut table: Vec<[String; 7]> = vec![header.map(String::from)];
        for row in &self.rows {
            let pass =
                |s: &Option<Side>| s.map_or("-".to_string(), |s| format!("{}/{}", s.passed, s.ran));
            let (tokens, cost, time) = match (&row.a, &row.b) {
                (Some(a), Some(b)) => (
                    delta(a.tokens, b.tokens, |d| {
                        signed(d, |v| format_count(v as u64))
                    }),
                    match (a.cost_usd, b.cost_usd) {
                        (Some(x), Some(y)) => delta(x, y, |d| signed(d, |v| format_cost(Some(v)))),
                        _ => "-".into(),
                    },
                    delta(a.wall_ms, b.wall_ms, |d| {
                        signed(d / 1000.0, |v| format!("{v:.1}s"))
                    }),
                ),
                _ => ("-".into(), "-".into(), "-".into()),
            };
            table.push([
                row.task.clone(),
                pass(&row.a),
                pass(&row.b),
                row.change().to_string(),
                tokens,
                cost,
                time,
            ]);
        }
        let widths: Vec<usize> = (0..7)
            .map(|c| {
                table
                    .iter()
                    .map(|r| r[c].chars().count())
                    .max()
                    .unwrap_or(0)
            })
            .collect();
        let mut out = String::new();
        for row in &table {
            let cells: Vec<String> = row
                .iter()
                .enumerate()
                .map(|(c, cell)| {
                    let pad = widths[c] - cell.chars().count();
                    if c >= 4 {
                        format!("{}{cell}", " ".repeat(pad))
                    } else {
                        format!("{cell}{}", " ".repeat(pad))
                    }
                })
                .collect();
            out.push_str(cells.join("  ").trim_end());
            out.push('\n');
        }
        let regressed = self.regressions();
        let fixed = self.rows.iter().filter(|r| r.change() == "fixed").count();
        out.push_str(&format!(
            "{} tasks compared: {regressed} regressed, {fixed} fixed\n",
            self.rows.len()
        ));
        out
    }
}

/// `+123 (+4.5%)`: the change from `a` to `b`.
fn delta(a: f64, b: f64, show: impl Fn(f64) -> String) -> String {
    let d = b - a;
    if a.abs() > f64::EPSILON {
        format!("{} ({:+.1}%)", show(d), d / a * 100.0)
    } else {
        show(d)
    }
}

fn signed(d: f64, show: impl Fn(f64) -> String) -> String {
    let sign = if d < 0.0 { "-" } else { "+" };
    format!("{sign}{}", show(d.abs()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::{AttemptResult, Summary, Tokens};
    use std::time::Duration;

    fn run(tasks: &[(&str, &[Status], u64, f64)]) -> RunResults {
        let tasks: Vec<TaskResult> = tasks
            .iter()
            .map(|(id, statuses, tokens, cost)| {
                let attempts: Vec<AttemptResult> = statuses
                    .iter()
                    .enumerate()
                    .map(|(i, s)| {
                        let mut a = AttemptResult::new(i as u32 + 1);
                        a.status = *s;
                        a.tokens = Tokens {
                            input: *tokens,
                            output: 0,
                            cached_input: 0,
                        };
                        a.cost_usd = Some(*cost);
                        a.wall_ms = 2000;
                        a
                    })
                    .collect();
                TaskResult {
                    id: id.to_string(),
                    agent: "default".into(),
                    tags: vec![],
                    workspace: "copy".into(),
                    status: TaskResult::status_of(&attempts),
                    attempts,
                }
            })
            .collect();
        RunResults {
            schema_version: 1,
            run_id: "r".into(),
            summary: Summary::of(&tasks, Duration::ZERO),
            tasks,
            ..RunResults::default()
        }
    }

    #[test]
    fn regressions_fixes_and_deltas() {
        use Status::*;
        let a = run(&[
            ("stable", &[Passed], 1000, 0.01),
            ("breaks", &[Passed, Passed], 1000, 0.01),
            ("heals", &[Failed], 1000, 0.01),
            ("dropped", &[Passed], 10, 0.0),
        ]);
        let b = run(&[
            ("stable", &[Passed], 1500, 0.02),
            ("breaks", &[Passed, BudgetExceeded], 500, 0.01),
            ("heals", &[Passed], 1000, 0.01),
            ("added", &[Passed], 10, 0.0),
        ]);
        let c = compare(&a, &b);
        assert_eq!(c.regressions(), 1);
        let changes: Vec<(&str, &str)> = c
            .rows
            .iter()
            .map(|r| (r.task.as_str(), r.change()))
            .collect();
        assert_eq!(
            changes,
            [
                ("stable@default", ""),
                ("breaks@default", "REGRESSED"),
                ("heals@default", "fixed"),
                ("dropped@default", "only in A"),
                ("added@default", "only in B"),
            ]
        );
        let text = c.render();
        let stable = text.lines().find(|l| l.starts_with("stable")).unwrap();
        assert!(stable.contains("+500 (+50.0%)"), "{text}");
        assert!(stable.contains("+$0.0100 (+100.0%)"), "{text}");
        assert!(stable.contains("+0.0s"), "{text}");
        let breaks = text.lines().find(|l| l.starts_with("breaks")).unwrap();
        assert!(breaks.contains("2/2") && breaks.contains("1/2"), "{text}");
        assert!(breaks.contains("-500 (-50.0%)"), "{text}");
        assert!(
            text.ends_with("5 tasks compared: 1 regressed, 1 fixed\n"),
            "{text}"
        );
    }
}
