//! `ask_user`: the model asks the user a question with two to four
//! labelled options (Claude Code's AskUserQuestion, Codex's
//! request_user_input), one of which it may recommend as the default, and
//! may let them answer in their own words.
//!
//! The engine asks (through the session's approver, one question at a
//! time); this module checks the arguments, makes the model's texts safe
//! to show (the model is hostile input: no control character or escape
//! sequence survives), and words the answer the model gets. Run by a
//! registry on its own, with no one to ask, the tool answers as a
//! non-interactive run does.

use super::{parse_args, Tool, ToolContext, ToolInput, ToolResult};
use cogni_protocol::{Question, QuestionOption, ToolFormat, ToolSpec, UserAnswer};
use futures::future::BoxFuture;
use serde::Deserialize;

/// The tool's name.
pub const NAME: &str = "ask_user";

/// Fewest options.
pub const MIN_OPTIONS: usize = 2;
/// Most options.
pub const MAX_OPTIONS: usize = 4;
/// Longest question, in characters.
pub const MAX_QUESTION_CHARS: usize = 1000;
/// Longest label, in characters.
pub const MAX_LABEL_CHARS: usize = 60;
/// Longest description of an option, in characters.
pub const MAX_DESCRIPTION_CHARS: usize = 200;
/// Longest answer in the user's own words the model gets, in characters.
pub const MAX_ANSWER_CHARS: usize = 2000;

/// The arguments as the model sends them.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Args {
    question: String,
    options: Vec<OptionArgs>,
    #[serde(default)]
    default: Option<String>,
    #[serde(default)]
    allow_free_text: bool,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct OptionArgs {
    label: String,
    #[serde(default)]
    description: Option<String>,
}

/// The tool: offered like any other; the engine runs its calls
/// (cogni-core's dispatch asks the session's approver).
pub struct AskUserTool;

impl Tool for AskUserTool {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: NAME.into(),
            description: "Ask the user a question with 2 to 4 options when you need their \
                          decision. Name the option you recommend in `default`: where no one can \
                          be asked, it is the answer at once. `allow_free_text` lets them answer \
                          in their own words."
                .into(),
            format: ToolFormat::Function {
                parameters: serde_json::json!({
                    "type": "object",
                    "properties": {
                        "question": {"type": "string"},
                        "options": {
                            "type": "array",
                            "minItems": MIN_OPTIONS,
                            "maxItems": MAX_OPTIONS,
                            "items": {
                                "type": "object",
                                "properties": {
                                    "label": {"type": "string", "description": "a few words"},
                                    "description": {"type": "string"}
                                },
                                "required": ["label"],
                                "additionalProperties": false
                            }
                        },
                        "default": {"type": "string", "description": "a label"},
                        "allow_free_text": {"type": "boolean"}
                    },
                    "required": ["question", "options"],
                    "additionalProperties": false
                }),
            },
            // It changes nothing (the engine never asks two questions at once).
            read_only: true,
        }
    }

    fn run<'a>(&'a self, input: ToolInput, _ctx: &'a ToolContext) -> BoxFuture<'a, ToolResult> {
        Box::pin(async move {
            match parse(input) {
                Ok(question) => answer(&question, &UserAnswer::Unattended),
                Err(result) => result,
            }
        })
    }
}

/// The call's arguments as a [`Question`], its texts safe to show, or the
/// error result that says what is wrong (nothing is asked then).
pub fn parse(input: ToolInput) -> Result<Question, ToolResult> {
    let args: Args = parse_args(NAME, input)?;
    check(args).map_err(|e| ToolResult::error(format!("nothing was asked: {e}")))
}

fn check(args: Args) -> Result<Question, String> {
    let question = clean(&args.question, true);
    if question.is_empty() {
        return Err("the question is empty".into());
    }
    let chars = question.chars().count();
    if chars > MAX_QUESTION_CHARS {
        return Err(format!(
            "the question has {chars} characters; keep it to {MAX_QUESTION_CHARS}"
        ));
    }
    let count = args.options.len();
    if !(MIN_OPTIONS..=MAX_OPTIONS).contains(&count) {
        return Err(format!(
            "{count} options; give {MIN_OPTIONS} to {MAX_OPTIONS}"
        ));
    }
    let mut options: Vec<QuestionOption> = Vec::with_capacity(count);
    for (i, option) in args.options.iter().enumerate() {
        let n = i + 1;
        let label = clean(&option.label, false);
        if label.is_empty() {
            return Err(format!("option {n} has an empty label"));
        }
        let chars = label.chars().count();
        if chars > MAX_LABEL_CHARS {
            return Err(format!(
                "option {n}'s label has {chars} characters; keep it to {MAX_LABEL_CHARS}"
            ));
        }
        if options.iter().any(|o| o.label == label) {
            return Err(format!(
                "two options are labelled `{label}`; make the labels distinct"
            ));
        }
        let description = option
            .description
            .as_deref()
            .map(|d| clean(d, false))
            .filter(|d| !d.is_empty());
        if let Some(chars) = description.as_ref().map(|d| d.chars().count()) {
            if chars > MAX_DESCRIPTION_CHARS {
                return Err(format!(
                    "option {n}'s description has {chars} characters; keep it to {MAX_DESCRIPTION_CHARS}"
                ));
            }
        }
        options.push(QuestionOption { label, description });
    }
    let default =
        match args.default.as_deref().map(|d| clean(d, false)) {
            None => None,
            Some(label) => Some(options.iter().position(|o| o.label == label).ok_or_else(
                || format!("`default` is `{label}`, which is not one of the labels"),
            )?),
        };
    Ok(Question {
        question,
        options,
        default,
        free_text: args.allow_free_text,
    })
}

/// `text` trimmed, with nothing that acts on a terminal or reorders what
/// is shown ([`visible`]); tabs, and in a one-line text line breaks,
/// become spaces.
pub fn clean(text: &str, multiline: bool) -> String {
    let cleaned: String = visible(text)
        .chars()
        .map(|c| match c {
            '\n' if multiline => '\n',
            '\t' | '\n' | '\r' => ' ',
            c => c,
        })
        .collect();
    cleaned.trim().to_string()
}

/// `text` without what acts on a terminal or reorders what is shown:
/// control characters other than line breaks and tabs (escape sequences
/// lose their ESC or CSI, so what is left of them is plain text) and
/// bidirectional overrides.
pub fn visible(text: &str) -> String {
    let bidi = |c: char| matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}');
    text.chars()
        .filter(|&c| matches!(c, '\n' | '\t' | '\r') || !(c.is_control() || bidi(c)))
        .collect()
}

/// What the model is told of `answer` to `question`.
pub fn answer(question: &Question, answer: &UserAnswer) -> ToolResult {
    let label = |i: usize| question.options.get(i).map_or("", |o| o.label.as_str());
    ToolResult::ok(match answer {
        UserAnswer::Chosen(i) => format!("The user chose: {}", label(*i)),
        UserAnswer::Text(text) => {
            let text: String = clean(text, true).chars().take(MAX_ANSWER_CHARS).collect();
            format!("The user answered in their own words: {text}")
        }
        UserAnswer::Declined => {
            "The user declined to answer: decide yourself, or go on without it.".to_string()
        }
        UserAnswer::Unattended => match question.default_label() {
            Some(default) => format!(
                "No one can be asked in this run (it is not interactive); your default stands: {default}"
            ),
            None => "no answer: decide yourself (no one can be asked in this run: it is not interactive)"
                .to_string(),
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn ask(args: serde_json::Value) -> Result<Question, String> {
        parse(ToolInput::Json(args)).map_err(|r| {
            assert!(r.is_error);
            r.content
        })
    }

    fn options(labels: &[&str]) -> serde_json::Value {
        labels.iter().map(|l| json!({"label": l})).collect()
    }

    #[test]
    fn a_question_has_two_to_four_distinct_labels_and_a_default_among_them() {
        let q = ask(json!({
            "question": "Which database?",
            "options": [{"label": "SQLite", "description": "one file"}, {"label": "Postgres"}],
            "default": "Postgres",
            "allow_free_text": true
        }))
        .unwrap();
        assert_eq!(q.options.len(), 2);
        assert_eq!(q.options[0].description.as_deref(), Some("one file"));
        assert_eq!(q.default_label(), Some("Postgres"));
        assert!(q.free_text);

        let refused = [
            (
                json!({"question": "Q?", "options": options(&["a"])}),
                "1 options; give 2 to 4",
            ),
            (
                json!({"question": "Q?", "options": options(&["a", "b", "c", "d", "e"])}),
                "5 options",
            ),
            (
                json!({"question": " \x1b ", "options": options(&["a", "b"])}),
                "the question is empty",
            ),
            (
                json!({"question": "Q?", "options": options(&["a", "\x1b\x07"])}),
                "option 2 has an empty label",
            ),
            (
                json!({"question": "Q?", "options": options(&["same", "same "])}),
                "two options are labelled `same`",
            ),
            (
                json!({"question": "Q?", "options": options(&["a", "b"]), "default": "c"}),
                "`default` is `c`",
            ),
            (
                json!({"question": "Q?", "options": options(&["a", "b"]), "multi": true}),
                "unknown field `multi`",
            ),
            (json!({"question": "Q?"}), "missing field `options`"),
            (
                json!({"question": "Q?", "options": options(&[&"x".repeat(61), "b"])}),
                "option 1's label has 61 characters",
            ),
            (
                json!({"question": "Q".repeat(1001), "options": options(&["a", "b"])}),
                "1001 characters",
            ),
            (
                json!({"question": "Q?", "options": [{"label": "a", "description": "d".repeat(201)}, {"label": "b"}]}),
                "option 1's description has 201 characters",
            ),
        ];
        for (args, expected) in refused {
            let e = ask(args.clone()).unwrap_err();
            assert!(e.contains(expected), "{args}: {e}");
        }
    }

    #[test]
    fn the_models_texts_lose_every_control_and_escape() {
        let q = ask(json!({
            "question": "Clear\x1b[2J the\u{9b}2J screen?\nSecond\tline\x07",
            "options": [
                {"label": "Yes\x1b]52;c;cHduZWQ=\x07", "description": "line\nbreak\u{202e}"},
                {"label": "\u{202e}No"}
            ],
            "default": "No"
        }))
        .unwrap();
        assert_eq!(q.question, "Clear[2J the2J screen?\nSecond line");
        assert_eq!(q.options[0].label, "Yes]52;c;cHduZWQ=");
        assert_eq!(q.options[0].description.as_deref(), Some("line break"));
        assert_eq!(q.default_label(), Some("No"));
        let everything = format!("{q:?}");
        assert!(!everything.contains('\u{1b}'), "{everything}");
    }

    #[test]
    fn the_answer_names_the_label_the_words_or_that_there_is_none() {
        let q = ask(json!({"question": "Q?", "options": options(&["a", "b"]), "default": "b"}))
            .unwrap();
        let text = |a: UserAnswer| answer(&q, &a).content;
        assert_eq!(text(UserAnswer::Chosen(0)), "The user chose: a");
        assert_eq!(
            text(UserAnswer::Text("use c\x1b[31m".into())),
            "The user answered in their own words: use c[31m"
        );
        assert!(text(UserAnswer::Declined).starts_with("The user declined to answer"));
        assert!(text(UserAnswer::Unattended).ends_with("your default stands: b"));
        let no_default = ask(json!({"question": "Q?", "options": options(&["a", "b"])})).unwrap();
        assert!(answer(&no_default, &UserAnswer::Unattended)
            .content
            .starts_with("no answer: decide yourself"));
        assert!(!answer(&q, &UserAnswer::Declined).is_error);
    }

    #[tokio::test]
    async fn run_alone_it_answers_as_no_one_can_be_asked() {
        let tmp = tempfile::tempdir().unwrap();
        let ctx = crate::paths::tests::ctx(tmp.path(), cogni_protocol::SandboxMode::ReadOnly);
        let args = json!({"question": "Q?", "options": options(&["a", "b"]), "default": "a"});
        let result = AskUserTool.run(ToolInput::Json(args), &ctx).await;
        assert!(
            result.content.ends_with("your default stands: a"),
            "{}",
            result.content
        );
        let bad = AskUserTool
            .run(
                ToolInput::Json(json!({"question": "Q?", "options": []})),
                &ctx,
            )
            .await;
        assert!(
            bad.is_error && bad.content.starts_with("nothing was asked"),
            "{}",
            bad.content
        );
    }
}
