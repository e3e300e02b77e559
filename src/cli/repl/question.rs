//! The model's questions (`ask_user`) in the REPL: the question, then a
//! menu of its options (↑↓ or a number chooses, Enter confirms, Esc or
//! Ctrl-C declines; with a free answer allowed, the last entry takes what
//! is typed). When stdin is not a terminal, the answer is read as a line.

use super::menu::{self, Key, Menu};
use super::term;
use crate::cli::render::{paint, strip_terminal_controls};
use crate::protocol::{Question, UserAnswer};
use std::io::{BufRead, Write};

/// Tries a line answer gets before it counts as declined.
const MAX_TRIES: usize = 3;

/// The menu of one question's options.
struct Options<'a> {
    question: &'a Question,
    /// The entry chosen so far: an option, or the last one for a free
    /// answer.
    selected: usize,
    /// The free answer typed so far.
    text: String,
    color: bool,
}

impl Options<'_> {
    fn entries(&self) -> usize {
        self.question.options.len() + usize::from(self.question.free_text)
    }

    /// The free answer's entry is selected.
    fn on_text(&self) -> bool {
        self.question.free_text && self.selected == self.question.options.len()
    }
}

impl Menu for Options<'_> {
    type Outcome = UserAnswer;

    fn lines(&self, width: usize) -> Vec<String> {
        let mut lines: Vec<String> = self
            .question
            .options
            .iter()
            .enumerate()
            .map(|(i, option)| {
                let mut row = format!("{}. {}", i + 1, strip_terminal_controls(&option.label));
                if self.question.default == Some(i) {
                    row.push_str(" (recommended)");
                }
                if let Some(description) = &option.description {
                    row.push_str(&format!(" · {}", strip_terminal_controls(description)));
                }
                row
            })
            .collect();
        if self.question.free_text {
            let typed = if self.text.is_empty() && !self.on_text() {
                "type your own answer".to_string()
            } else {
                format!("{}▏", strip_terminal_controls(&self.text))
            };
            lines.push(format!("{}. Other: {typed}", lines.len() + 1));
        }
        let mut rows: Vec<String> = lines
            .iter()
            .enumerate()
            .map(|(i, line)| {
                let mark = if i == self.selected { '›' } else { ' ' };
                let row = term::fit(&format!("{mark} {line}"), width);
                if i == self.selected && self.color {
                    format!("\x1b[7m{row}\x1b[0m")
                } else {
                    row
                }
            })
            .collect();
        let help = format!(
            "  ↑↓ or 1-{} choose · Enter confirms · Esc declines",
            self.entries()
        );
        rows.push(term::fit(&paint(self.color, "2", &help), width));
        rows
    }

    fn press(&mut self, key: Key) -> Option<UserAnswer> {
        let last = self.entries() - 1;
        match key {
            Key::Up => self.selected = self.selected.saturating_sub(1),
            Key::Down => self.selected = (self.selected + 1).min(last),
            Key::Cancel => return Some(UserAnswer::Declined),
            Key::Enter if self.on_text() => {
                let text = self.text.trim();
                if !text.is_empty() {
                    return Some(UserAnswer::Text(text.to_string()));
                }
            }
            Key::Enter => return Some(UserAnswer::Chosen(self.selected)),
            Key::Backspace if self.on_text() => {
                self.text.pop();
            }
            Key::Char(c) if self.on_text() => self.text.push(c),
            Key::Char(c) => match c.to_digit(10).map(|d| d as usize) {
                Some(n @ 1..) if n <= self.entries() => self.selected = n - 1,
                Some(_) => {}
                // Typing starts a free answer, where there may be one.
                None if self.question.free_text => {
                    self.selected = last;
                    self.text.push(c);
                }
                None => {}
            },
            Key::Backspace | Key::Tab => {}
        }
        None
    }
}

/// The question's lines above its options: `? ` before its first line.
fn header(question: &Question, color: bool) -> String {
    let text = strip_terminal_controls(&question.question);
    let lines: Vec<String> = text
        .lines()
        .enumerate()
        .map(|(i, line)| {
            let lead = if i == 0 { "? " } else { "  " };
            paint(color, "33", &format!("{lead}{line}"))
        })
        .collect();
    format!("\n{}\n", lines.join("\n"))
}

/// What the answer reads as under the question.
fn answered(question: &Question, answer: &UserAnswer) -> String {
    match answer {
        UserAnswer::Chosen(i) => question.options.get(*i).map_or_else(String::new, |o| {
            strip_terminal_controls(&o.label).into_owned()
        }),
        UserAnswer::Text(text) => format!("“{}”", strip_terminal_controls(text)),
        UserAnswer::Declined | UserAnswer::Unattended => "declined".to_string(),
    }
}

/// Ask `question` on the terminal: the question, the menu of its options,
/// then the answer under the question. Blocking.
pub(super) fn ask(question: &Question, color: bool) -> UserAnswer {
    let mut out = std::io::stdout();
    let _ = out.write_all(header(question, color).as_bytes());
    let _ = out.flush();
    let mut options = Options {
        question,
        selected: question.default.unwrap_or(0),
        text: String::new(),
        color,
    };
    let answer = menu::run(&mut options).unwrap_or(UserAnswer::Declined);
    let _ = writeln!(out, "  → {}", answered(question, &answer));
    let _ = out.flush();
    answer
}

/// Ask `question` with its options numbered and read the answer as a line
/// from `input`: a number chooses, other words are the free answer (where
/// there may be one), an empty line or the end of input declines.
pub(super) fn ask_lines(
    question: &Question,
    input: &mut dyn BufRead,
    out: &mut dyn Write,
) -> UserAnswer {
    let _ = write!(out, "{}", header(question, false));
    for (i, option) in question.options.iter().enumerate() {
        let recommended = if question.default == Some(i) {
            " (recommended)"
        } else {
            ""
        };
        let description = option
            .description
            .as_deref()
            .map(|d| format!(" · {}", strip_terminal_controls(d)))
            .unwrap_or_default();
        let _ = writeln!(
            out,
            "  {}. {}{recommended}{description}",
            i + 1,
            strip_terminal_controls(&option.label)
        );
    }
    let count = question.options.len();
    let own = if question.free_text {
        " or your own words"
    } else {
        ""
    };
    for _ in 0..MAX_TRIES {
        let _ = write!(out, "  answer 1-{count}{own}; empty declines > ");
        let _ = out.flush();
        let mut line = String::new();
        let answer = match input.read_line(&mut line) {
            Ok(0) | Err(_) => UserAnswer::Declined,
            Ok(_) => match line.trim() {
                "" => UserAnswer::Declined,
                text => match text.parse::<usize>() {
                    Ok(n @ 1..) if n <= count => UserAnswer::Chosen(n - 1),
                    _ if question.free_text => UserAnswer::Text(text.to_string()),
                    _ => {
                        let _ = writeln!(out, "  please answer with a number from 1 to {count}");
                        continue;
                    }
                },
            },
        };
        let _ = writeln!(out, "  → {}", answered(question, &answer));
        return answer;
    }
    UserAnswer::Declined
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::QuestionOption;

    fn question(free_text: bool) -> Question {
        Question {
            question: "Which database?\nIt stays.".into(),
            options: ["SQLite", "Postgres", "MySQL"]
                .iter()
                .map(|l| QuestionOption {
                    label: l.to_string(),
                    description: (*l == "SQLite").then(|| "one file".to_string()),
                })
                .collect(),
            default: Some(1),
            free_text,
        }
    }

    fn menu(q: &Question) -> Options<'_> {
        Options {
            question: q,
            selected: q.default.unwrap_or(0),
            text: String::new(),
            color: false,
        }
    }

    #[test]
    fn arrows_and_numbers_choose_and_enter_confirms() {
        let q = question(false);
        let mut m = menu(&q);
        let lines = m.lines(80);
        assert_eq!(
            lines,
            [
                "  1. SQLite · one file",
                "› 2. Postgres (recommended)",
                "  3. MySQL",
                "  ↑↓ or 1-3 choose · Enter confirms · Esc declines",
            ]
        );
        assert_eq!(m.press(Key::Down), None);
        assert_eq!(m.press(Key::Down), None, "the last entry stays");
        assert_eq!(m.press(Key::Enter), Some(UserAnswer::Chosen(2)));
        assert_eq!(m.press(Key::Char('1')), None);
        assert_eq!(m.press(Key::Char('9')), None, "no ninth option");
        assert_eq!(m.press(Key::Char('x')), None, "no free answer here");
        assert_eq!(m.press(Key::Enter), Some(UserAnswer::Chosen(0)));
        assert_eq!(m.press(Key::Cancel), Some(UserAnswer::Declined));
    }

    #[test]
    fn the_other_entry_takes_what_is_typed() {
        let q = question(true);
        let mut m = menu(&q);
        assert!(m.lines(80)[3].ends_with("4. Other: type your own answer"));
        // Typing on an option starts the free answer.
        for c in "Mongo9".chars() {
            m.press(Key::Char(c));
        }
        m.press(Key::Backspace);
        assert!(
            m.lines(80)[3].starts_with("› 4. Other: Mongo▏"),
            "{:?}",
            m.lines(80)
        );
        m.press(Key::Up);
        assert_eq!(m.press(Key::Enter), Some(UserAnswer::Chosen(2)));
        m.press(Key::Char('4'));
        assert_eq!(m.press(Key::Enter), Some(UserAnswer::Text("Mongo".into())));
        m.text.clear();
        assert_eq!(m.press(Key::Enter), None, "nothing typed: nothing to send");
    }

    #[test]
    fn rows_fit_the_terminal_and_show_no_controls() {
        let mut q = question(false);
        q.options[0].label = format!("{}\x1b]52;c;eA==\x07", "long ".repeat(20));
        let lines = menu(&q).lines(40);
        assert!(lines.iter().all(|l| l.chars().count() <= 40), "{lines:#?}");
        assert!(!lines.iter().any(|l| l.contains('\x1b')), "{lines:#?}");
        assert_eq!(header(&q, false), "\n? Which database?\n  It stays.\n");
    }

    #[test]
    fn a_line_answer_is_a_number_or_own_words() {
        let ask = |free: bool, typed: &str| {
            let mut out = Vec::new();
            let answer = ask_lines(&question(free), &mut typed.as_bytes(), &mut out);
            (answer, String::from_utf8(out).unwrap())
        };
        let (answer, shown) = ask(false, "3\n");
        assert_eq!(answer, UserAnswer::Chosen(2));
        assert!(
            shown.contains("  1. SQLite · one file\n  2. Postgres (recommended)\n"),
            "{shown}"
        );
        assert!(shown.ends_with("  → MySQL\n"), "{shown}");
        assert_eq!(ask(false, "\n").0, UserAnswer::Declined);
        assert_eq!(ask(false, "").0, UserAnswer::Declined, "end of input");
        let (answer, shown) = ask(false, "mongo\n7\n1\n");
        assert_eq!(answer, UserAnswer::Chosen(0));
        assert!(
            shown.contains("please answer with a number from 1 to 3"),
            "{shown}"
        );
        assert_eq!(
            ask(false, "x\nx\nx\n1\n").0,
            UserAnswer::Declined,
            "three tries"
        );
        assert_eq!(ask(true, "mongo\n").0, UserAnswer::Text("mongo".into()));
    }
}
