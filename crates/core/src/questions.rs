//! The model's questions to the user (`ask_user`): asked through the
//! session's approver, one at a time, each reported as two `question`
//! events (asked, then answered) and kept with its answer for the run's
//! results. No approval comes before a question: asking is its point.

use super::session::Session;
use cogni_protocol::{AgentEvent, EventSink, QuestionRecord, ToolCall};
use cogni_tools::{ask_user, ToolInput, ToolResult};
use std::sync::{Arc, Mutex};

/// The questions of a conversation. Shared with the agents it delegates
/// to, so that a tree of agents asks one question at a time too.
#[derive(Clone, Default)]
pub(crate) struct Questions {
    /// Held while a question waits for its answer.
    asking: Arc<tokio::sync::Mutex<()>>,
    /// Every question answered (or not), in order.
    log: Arc<Mutex<Vec<QuestionRecord>>>,
}

impl Session {
    /// Ask the user the question of `call`, an `ask_user` call, once no
    /// other question waits; what the model is told of the answer. A call
    /// whose arguments are wrong asks nothing and says why.
    pub(super) async fn ask_user(&self, call: &ToolCall, sink: &dyn EventSink) -> ToolResult {
        let question = match ask_user::parse(ToolInput::Text(call.arguments.clone())) {
            Ok(question) => question,
            Err(refused) => return refused,
        };
        let questions = &self.conversation.questions;
        let _turn = questions.asking.lock().await;
        let event = |record| AgentEvent::Question {
            call_id: call.id.clone(),
            record,
        };
        sink.emit(event(QuestionRecord::asked(&question)));
        let answer = self
            .conversation
            .approver
            .question(&call.id, &question)
            .await;
        let record = QuestionRecord::settled(&question, &answer);
        if let Ok(mut log) = questions.log.lock() {
            log.push(record.clone());
        }
        sink.emit(event(record));
        ask_user::answer(&question, &answer)
    }

    /// The questions the model asked the user so far (its delegated
    /// agents' included), each with its answer, in order.
    pub fn questions(&self) -> Vec<QuestionRecord> {
        self.conversation
            .questions
            .log
            .lock()
            .map(|log| log.clone())
            .unwrap_or_default()
    }
}
