//! Questions the model asks the user (the `ask_user` tool): what is
//! asked, how it was answered, and the record a run keeps of both.

use serde::{Deserialize, Serialize};

/// A question with two to four labelled options, checked and with its
/// texts safe to show (cogni-tools' `ask_user` builds it).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Question {
    /// The question, one or more lines.
    pub question: String,
    /// The options, in the order the model gave them; labels are distinct.
    pub options: Vec<QuestionOption>,
    /// The option the model recommends, by index into `options`.
    pub default: Option<usize>,
    /// The user may answer in their own words instead.
    pub free_text: bool,
}

impl Question {
    /// The label of the option the model recommends.
    pub fn default_label(&self) -> Option<&str> {
        self.default
            .and_then(|i| self.options.get(i))
            .map(|o| o.label.as_str())
    }
}

/// One option of a [`Question`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct QuestionOption {
    /// A few words, one line.
    pub label: String,
    /// What choosing it means, one line.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
}

/// How a question was answered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum UserAnswer {
    /// The user chose this option (an index into the question's options).
    Chosen(usize),
    /// The user answered in their own words.
    Text(String),
    /// The user declined to answer (Esc, Ctrl-C, the editor's "decline").
    Declined,
    /// No one could be asked (a non-interactive run): the model's default
    /// stands, or there is no answer.
    Unattended,
}

/// Where a question stands, as events and results name it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum QuestionStatus {
    /// The user is being asked.
    Asked,
    /// The user chose an option or wrote an answer.
    Answered,
    /// The user declined to answer.
    Declined,
    /// No one could be asked: the default stands (`answer`), or nothing
    /// does.
    Unattended,
}

/// A question and where it stands: the `question` event's fields and an
/// entry of results.json's `questions`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct QuestionRecord {
    /// The question.
    pub question: String,
    /// Its options.
    pub options: Vec<QuestionOption>,
    /// The label of the option the model recommends.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default: Option<String>,
    /// The user could answer in their own words.
    pub free_text: bool,
    /// Where it stands.
    pub status: QuestionStatus,
    /// The label chosen: by the user, or the default when no one could
    /// be asked.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub answer: Option<String>,
    /// The user's own words, when they wrote an answer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
}

impl QuestionRecord {
    /// `question` as it is being asked.
    pub fn asked(question: &Question) -> Self {
        QuestionRecord {
            question: question.question.clone(),
            options: question.options.clone(),
            default: question.default_label().map(str::to_string),
            free_text: question.free_text,
            status: QuestionStatus::Asked,
            answer: None,
            text: None,
        }
    }

    /// `question` answered with `answer`.
    pub fn settled(question: &Question, answer: &UserAnswer) -> Self {
        let chosen = |i: usize| question.options.get(i).map(|o| o.label.clone());
        let (status, answer, text) = match answer {
            UserAnswer::Chosen(i) => (QuestionStatus::Answered, chosen(*i), None),
            UserAnswer::Text(text) => (QuestionStatus::Answered, None, Some(text.clone())),
            UserAnswer::Declined => (QuestionStatus::Declined, None, None),
            UserAnswer::Unattended => (
                QuestionStatus::Unattended,
                question.default_label().map(str::to_string),
                None,
            ),
        };
        QuestionRecord {
            status,
            answer,
            text,
            ..QuestionRecord::asked(question)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn question(default: Option<usize>) -> Question {
        Question {
            question: "Which database?".into(),
            options: vec![
                QuestionOption {
                    label: "SQLite".into(),
                    description: Some("one file".into()),
                },
                QuestionOption {
                    label: "Postgres".into(),
                    description: None,
                },
            ],
            default,
            free_text: true,
        }
    }

    #[test]
    fn records_name_the_answer_by_its_label() {
        let q = question(Some(1));
        let json = |r: QuestionRecord| serde_json::to_value(r).unwrap();
        assert_eq!(
            json(QuestionRecord::asked(&q)),
            serde_json::json!({
                "question": "Which database?",
                "options": [{"label": "SQLite", "description": "one file"}, {"label": "Postgres"}],
                "default": "Postgres",
                "free_text": true,
                "status": "asked"
            })
        );
        let chosen = QuestionRecord::settled(&q, &UserAnswer::Chosen(0));
        assert_eq!(
            (chosen.status, chosen.answer.as_deref()),
            (QuestionStatus::Answered, Some("SQLite"))
        );
        let wrote = QuestionRecord::settled(&q, &UserAnswer::Text("MySQL".into()));
        assert_eq!((wrote.answer, wrote.text.as_deref()), (None, Some("MySQL")));
        let alone = QuestionRecord::settled(&q, &UserAnswer::Unattended);
        assert_eq!(
            (alone.status, alone.answer.as_deref()),
            (QuestionStatus::Unattended, Some("Postgres"))
        );
        let nothing = QuestionRecord::settled(&question(None), &UserAnswer::Unattended);
        assert_eq!(nothing.answer, None);
        let declined = QuestionRecord::settled(&q, &UserAnswer::Declined);
        assert_eq!(
            (declined.status, declined.answer),
            (QuestionStatus::Declined, None)
        );
    }
}
