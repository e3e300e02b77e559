//! The web search a provider runs on its own servers (`[tools] web_search`:
//! the Responses `web_search` tool, Anthropic's server-side
//! `web_search` tool): what it found, and the blocks the API needs back.

use serde::{Deserialize, Serialize};

/// One search the provider ran while it answered. Kept in history as an
/// assistant item; the API that ran it gets [`WebSearch::blocks`] back
/// exactly as it sent them (Anthropic checks their encrypted content),
/// other APIs get nothing of it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WebSearch {
    /// The provider's id of the search (`ws_...`, `srvtoolu_...`).
    pub id: String,
    /// What was searched for (empty when the provider did not say).
    #[serde(default)]
    pub query: String,
    /// The pages found, in the provider's order (Responses reports them
    /// only when asked; empty then).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub results: Vec<WebSource>,
    /// The provider's error code when the search failed
    /// (`max_uses_exceeded`, `too_many_requests`, ...).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// The wire API that ran it: `responses`, `anthropic`.
    pub source: String,
    /// The API's own blocks for it, verbatim: a Responses `web_search_call`
    /// item, or Anthropic's `server_tool_use` and `web_search_tool_result`
    /// blocks.
    pub blocks: Vec<serde_json::Value>,
}

impl WebSearch {
    /// One line for people: `web search "rust 1.90 release": 5 results`,
    /// or what failed.
    pub fn describe(&self) -> String {
        let query = if self.query.is_empty() {
            String::new()
        } else {
            format!(" {:?}", self.query)
        };
        match (&self.error, self.results.len()) {
            (Some(code), _) => format!("web search{query} failed: {code}"),
            (None, 1) => format!("web search{query}: 1 result"),
            (None, n) => format!("web search{query}: {n} results"),
        }
    }
}

/// A page a search found or an answer cites.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WebSource {
    /// The page's address.
    pub url: String,
    /// Its title, when the provider gave one.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub title: String,
}

/// A citation in the model's answer: the page a passage rests on.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Citation {
    /// The page cited.
    #[serde(flatten)]
    pub page: WebSource,
    /// The cited passage (Anthropic's `cited_text`), when given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cited_text: Option<String>,
}

/// USD per search the providers charge for their web search (Anthropic and
/// OpenAI both list $10 per 1,000), counted against `--max-cost` unless a
/// model family's `web_search_price` says otherwise.
pub const WEB_SEARCH_USD: f64 = 0.01;
