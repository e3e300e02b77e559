//! Local token estimates with tiktoken, for providers that report no usage.
//!
//! The tokenizer is loaded on first use only (it takes a noticeable fraction
//! of a second), never on `--help`, `--version` or runs whose provider
//! reports usage. Callers on the async runtime go through [`estimate`],
//! which runs the work on the blocking pool.

use cogni_protocol::{Content, HistoryItem};
use std::sync::OnceLock;
use tiktoken_rs::CoreBPE;

fn bpe() -> Option<&'static CoreBPE> {
    static BPE: OnceLock<Option<CoreBPE>> = OnceLock::new();
    BPE.get_or_init(|| tiktoken_rs::o200k_base().ok()).as_ref()
}

/// Tokens in `text`; falls back to 4 bytes per token if the tokenizer
/// cannot be loaded.
pub fn count(text: &str) -> u64 {
    match bpe() {
        Some(bpe) => bpe.encode_ordinary(text).len() as u64,
        None => (text.len() as u64).div_ceil(4),
    }
}

/// Per-message framing overhead in chat formats.
const PER_ITEM_OVERHEAD: u64 = 4;

/// Tokens of one history item as a model would see it.
pub fn count_item(item: &HistoryItem) -> u64 {
    item_tokens(item, count, false)
}

/// An item's tokens, its texts counted by `count`, its images by
/// Anthropic's rule when `anthropic_images`, else OpenAI's
/// ([`cogni_protocol::Image::tokens`]).
fn item_tokens(item: &HistoryItem, count: impl Fn(&str) -> u64, anthropic_images: bool) -> u64 {
    PER_ITEM_OVERHEAD
        + match &item.content {
            Content::Text { text, .. } => count(text),
            Content::ToolCall(c) => count(&c.name) + count(&c.arguments),
            Content::ToolOutput(o) => {
                count(&o.content)
                    + o.images
                        .iter()
                        .map(|i| i.tokens(anthropic_images))
                        .sum::<u64>()
            }
            Content::Reasoning(r) => count(&r.text),
            Content::Image(image) => image.tokens(anthropic_images),
            // The pages a search brought in travel as the API's own
            // (partly encrypted) blocks: 4 bytes a token of what is sent.
            Content::WebSearch(search) => search
                .blocks
                .iter()
                .map(|b| (b.to_string().len() as u64).div_ceil(4))
                .sum(),
        }
}

/// How a model's tokens are estimated between the provider's reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Estimator {
    /// tiktoken's o200k encoding (OpenAI models).
    Tiktoken,
    /// 4 bytes a token (every other model: no local tokenizer to load).
    Bytes,
}

impl Estimator {
    /// Estimated tokens of `text`.
    pub fn count(self, text: &str) -> u64 {
        match self {
            Estimator::Tiktoken => count(text),
            Estimator::Bytes => (text.len() as u64).div_ceil(4),
        }
    }

    /// Estimated tokens of one history item: its text (a call's name and
    /// arguments, an output, reasoning) plus a fixed per-item overhead; an
    /// image as OpenAI counts it for tiktoken's models (512-pixel tiles),
    /// as Anthropic does for the others (width × height / 750).
    pub fn count_item(self, item: &HistoryItem) -> u64 {
        item_tokens(item, |t| self.count(t), self == Estimator::Bytes)
    }
}

/// Tokens of a conversation as a model would see it.
pub fn count_items<'a>(items: impl IntoIterator<Item = &'a HistoryItem>) -> u64 {
    items.into_iter().map(count_item).sum()
}

/// [`count`] off the async runtime.
pub async fn estimate(texts: Vec<String>) -> u64 {
    tokio::task::spawn_blocking(move || texts.iter().map(|t| count(t)).sum())
        .await
        .unwrap_or(0)
}

/// [`count_items`] off the async runtime.
pub async fn estimate_items(items: Vec<HistoryItem>) -> u64 {
    tokio::task::spawn_blocking(move || count_items(&items))
        .await
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use cogni_protocol::Role;

    #[test]
    fn counts_tokens_not_bytes() {
        let n = count("hello world, this is a test");
        assert!((4..=10).contains(&n), "{n}");
        assert_eq!(count(""), 0);
        let items = [HistoryItem::text(Role::User, "hello world")];
        assert_eq!(
            count_items(&items),
            count("hello world") + PER_ITEM_OVERHEAD
        );
    }

    #[test]
    fn the_byte_estimator_counts_four_bytes_a_token() {
        assert_eq!(Estimator::Bytes.count("abcdefgh"), 2);
        assert_eq!(Estimator::Bytes.count("abcdefghi"), 3);
        let item = HistoryItem::text(Role::User, "x".repeat(40));
        assert_eq!(Estimator::Bytes.count_item(&item), 10 + PER_ITEM_OVERHEAD);
        assert_eq!(Estimator::Tiktoken.count_item(&item), count_item(&item));
    }
}
