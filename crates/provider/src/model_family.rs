//! Model families: per-model defaults and capabilities.
//!
//! A built-in catalog recognises common models by name; `[model_families.<model>]`
//! in the config declares new ones or adjusts known ones. A model no family
//! matches is an error unless its provider names a default family.

use super::MaxTokensParam;
pub use cogni_protocol::Price;
use cogni_protocol::{ContextStrategyKind, EditTool};
use serde::Deserialize;
use std::collections::BTreeMap;

/// The base instructions every built-in family starts from.
pub const BASE_INSTRUCTIONS: &str = include_str!("base_instructions.md");

/// The spec's `ModelFamily`.
#[derive(Debug, Clone, PartialEq)]
pub struct ModelFamily {
    /// Catalog name of the family (`gpt-4.1`, `claude`, `generic`, ...).
    pub family: String,
    /// The base of the system prompt: [`BASE_INSTRUCTIONS`], or the
    /// override's `base_instructions`.
    pub base_instructions_template: String,
    /// The model expects `apply_patch` instructions in the system prompt
    /// when the tool itself is not offered (it calls it through the shell).
    pub needs_special_apply_patch_instructions: bool,
    /// Whether requests may let the model make several tool calls at once.
    pub supports_parallel_tool_calls: bool,
    /// Tokens the model accepts in one request (input + output).
    pub context_window: u64,
    /// True when `context_window` is the generic family's default rather
    /// than a value the catalog or the config gives for this model.
    pub context_window_is_default: bool,
    /// Largest output the model produces, as the catalog knows it (`cogni
    /// models` shows it; requests send `default_max_tokens` or the
    /// configured `max_tokens`, not this).
    pub max_output_tokens: Option<u32>,
    /// Sampling defaults of the model, used when the agent config sets none.
    pub temperature: Option<f32>,
    /// The output limit sent when the config sets none (the override's
    /// `max_tokens`); `None`: none is sent.
    pub default_max_tokens: Option<u32>,
    /// The edit tool the model was trained on.
    pub edit_tool: EditTool,
    /// Whether the model takes a reasoning effort (o-series, GPT-5, Claude).
    pub supports_reasoning: bool,
    /// What the model costs, when known (for cost budgets and metrics).
    pub price: Option<Price>,
    /// The effort sent when the config sets none (`None`: send none).
    pub reasoning_effort: Option<String>,
    /// How Chat Completions names the output limit: OpenAI's o-series and
    /// GPT-5 take only `max_completion_tokens`.
    pub max_tokens_param: MaxTokensParam,
    /// Whether the model reads its tools from the system prompt as well
    /// (one line per tool); false for every built-in family.
    pub tools_in_prompt: bool,
    /// How requests stay within the window; `None`: by its size.
    pub context_strategy: Option<ContextStrategyKind>,
    /// How the model calls tools: the API's tool calling, or JSON blocks in
    /// its text ([`super::text_tools`]); native for every built-in family.
    pub tool_call_mode: ToolCallMode,
    /// Whether the model takes images (attached ones, `view_image`).
    pub supports_images: bool,
}

/// How a model calls tools.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ToolCallMode {
    /// The wire API's own tool calling.
    #[default]
    Native,
    /// For models without it: the tools are described in the instructions
    /// and the model writes JSON tool-call blocks in its reply.
    Text,
}

impl ToolCallMode {
    /// The mode's name in config (`native`, `text`).
    pub fn as_str(self) -> &'static str {
        match self {
            ToolCallMode::Native => "native",
            ToolCallMode::Text => "text",
        }
    }
}

struct CatalogEntry {
    /// Matches model names starting with this prefix (after any `vendor/`).
    prefix: &'static str,
    family: &'static str,
    context_window: u64,
    max_output_tokens: Option<u32>,
    parallel: bool,
    special_apply_patch: bool,
    edit_tool: EditTool,
    /// Reasoning support and the default effort.
    reasoning: Reasoning,
}

#[derive(Clone, Copy)]
enum Reasoning {
    No,
    /// Supported, off unless configured.
    Optional,
    /// Supported, on at this effort by default.
    Default(&'static str),
}

const fn entry(
    prefix: &'static str,
    family: &'static str,
    context_window: u64,
    max_output_tokens: Option<u32>,
    parallel: bool,
    edit_tool: EditTool,
    reasoning: Reasoning,
) -> CatalogEntry {
    CatalogEntry {
        prefix,
        family,
        context_window,
        max_output_tokens,
        parallel,
        // Models trained on apply_patch need its instructions when the tool
        // is not offered (they then call it through the shell).
        special_apply_patch: matches!(edit_tool, EditTool::ApplyPatch),
        edit_tool,
        reasoning,
    }
}

use EditTool::{ApplyPatch, ApplyPatchFreeform, EditFile};
use Reasoning::{Default as Think, No, Optional};

/// Longest prefix wins, so more specific names come first within a vendor.
#[rustfmt::skip]
const CATALOG: &[CatalogEntry] = &[
    //    prefix      family      context     max output      parallel edit tool           reasoning
    entry("gpt-5",    "gpt-5",    272_000,    Some(128_000),  true,  ApplyPatchFreeform, Think("medium")),
    entry("codex-",   "gpt-5",    272_000,    Some(128_000),  true,  ApplyPatchFreeform, Think("medium")),
    entry("gpt-4.1",  "gpt-4.1",  1_047_576,  Some(32_768),   true,  ApplyPatch,         No),
    entry("gpt-4o",   "gpt-4o",   128_000,    Some(16_384),   true,  ApplyPatch,         No),
    entry("gpt-oss",  "gpt-oss",  131_072,    Some(32_768),   true,  ApplyPatch,         Think("medium")),
    entry("o3",       "o3",       200_000,    Some(100_000),  true,  ApplyPatch,         Think("medium")),
    entry("o4-mini",  "o4-mini",  200_000,    Some(100_000),  true,  ApplyPatch,         Think("medium")),
    entry("claude-",  "claude",   200_000,    Some(32_000),   true,  EditFile,           Optional),
    entry("gemini-",  "gemini",   1_048_576,  Some(65_536),   true,  EditFile,           No),
    entry("qwen",     "qwen",     32_768,     Some(8_192),    true,  EditFile,           No),
    entry("llama",    "llama",    131_072,    Some(8_192),    false, EditFile,           No),
    entry("mistral",  "mistral",  32_768,     Some(8_192),    true,  EditFile,           No),
    entry("devstral", "mistral",  131_072,    Some(8_192),    true,  EditFile,           No),
    entry("deepseek", "deepseek", 131_072,    Some(8_192),    true,  EditFile,           No),
    entry("scripted", "scripted", 128_000,    None,           true,  ApplyPatch,         No),
];

/// Families whose Chat Completions requests must carry
/// `max_completion_tokens` (OpenAI rejects `max_tokens` for them).
const COMPLETION_TOKENS_FAMILIES: &[&str] = &["gpt-5", "o3", "o4-mini"];

/// Families whose models take images.
const IMAGE_FAMILIES: &[&str] = &[
    "gpt-5", "gpt-4.1", "gpt-4o", "o3", "o4-mini", "claude", "gemini", "scripted",
];

/// Families whose tokenizer is o200k (or close to it, like gpt-oss's).
const TIKTOKEN_FAMILIES: &[&str] = &["gpt-5", "gpt-4.1", "gpt-4o", "gpt-oss", "o3", "o4-mini"];

/// List prices (USD per million tokens) by model-name prefix, longest
/// prefix wins. Prices change: override in `[model_families."<model>"]`.
#[rustfmt::skip]
const PRICES: &[(&str, Price)] = &[
    ("gpt-5",            Price::new(1.25, 0.125, 10.0, 0.0)),
    ("gpt-5-mini",       Price::new(0.25, 0.025, 2.0, 0.0)),
    ("gpt-5-nano",       Price::new(0.05, 0.005, 0.4, 0.0)),
    ("gpt-4.1",          Price::new(2.0, 0.5, 8.0, 0.0)),
    ("gpt-4.1-mini",     Price::new(0.4, 0.1, 1.6, 0.0)),
    ("gpt-4.1-nano",     Price::new(0.1, 0.025, 0.4, 0.0)),
    ("gpt-4o",           Price::new(2.5, 1.25, 10.0, 0.0)),
    ("gpt-4o-mini",      Price::new(0.15, 0.075, 0.6, 0.0)),
    ("o3",               Price::new(2.0, 0.5, 8.0, 0.0)),
    ("o4-mini",          Price::new(1.1, 0.275, 4.4, 0.0)),
    ("claude-sonnet",    Price::new(3.0, 0.3, 15.0, 3.75)),
    ("claude-opus-4-5",  Price::new(5.0, 0.5, 25.0, 6.25)),
    ("claude-opus",      Price::new(15.0, 1.5, 75.0, 18.75)),
    ("claude-haiku-4-5", Price::new(1.0, 0.1, 5.0, 1.25)),
    ("claude-3-5-haiku", Price::new(0.8, 0.08, 4.0, 1.0)),
    ("scripted",         Price::new(0.0, 0.0, 0.0, 0.0)),
];

fn price_of(model: &str) -> Option<Price> {
    let base = model
        .rsplit('/')
        .next()
        .unwrap_or(model)
        .to_ascii_lowercase();
    PRICES
        .iter()
        .filter(|(prefix, _)| base.starts_with(prefix))
        .max_by_key(|(prefix, _)| prefix.len())
        .map(|(_, price)| *price)
}

/// The family used for unknown models of providers that allow it.
const GENERIC: CatalogEntry = entry("", "generic", 32_768, Some(8_192), true, EditFile, No);

/// `[model_families.<model>]` in the config: every field optional; a field
/// set here replaces the catalog's value.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FamilyOverride {
    /// Start from this catalog family (`generic`, `gpt-4.1`, `claude`, ...)
    /// instead of the one matched by name.
    pub inherit: Option<String>,
    /// The context window in tokens; setting it marks the window as known.
    pub context_window: Option<u64>,
    /// The largest output the model produces, in tokens.
    pub max_output_tokens: Option<u32>,
    /// Whether the model may make several tool calls at once.
    pub supports_parallel_tool_calls: Option<bool>,
    /// Put `apply_patch` instructions in the system prompt when the tool is
    /// not offered.
    pub needs_special_apply_patch_instructions: Option<bool>,
    /// Replaces the built-in base instructions of the system prompt.
    pub base_instructions: Option<String>,
    /// The model's default sampling temperature.
    pub temperature: Option<f32>,
    /// The default output limit (becomes
    /// [`ModelFamily::default_max_tokens`]).
    pub max_tokens: Option<u32>,
    /// The edit tool the model gets by default.
    pub edit_tool: Option<EditTool>,
    /// Whether the model takes a reasoning effort.
    pub supports_reasoning: Option<bool>,
    /// The reasoning effort sent when the config sets none.
    pub reasoning_effort: Option<String>,
    /// How Chat Completions names the output limit for this model.
    pub max_tokens_param: Option<MaxTokensParam>,
    /// List the tools in the system prompt too.
    pub tools_in_prompt: Option<bool>,
    /// `sliding_window` or `summarize` (default: by the context window).
    pub context_strategy: Option<ContextStrategyKind>,
    /// `native` (default) or `text`: tool calls written as JSON blocks in
    /// the reply, for models without tool calling.
    pub tool_call_mode: Option<ToolCallMode>,
    /// Whether the model takes images.
    pub supports_images: Option<bool>,
    /// USD per million tokens; all four default to the catalog's price or 0.
    pub input_price: Option<f64>,
    /// USD per million input tokens read from the prompt cache.
    pub cached_input_price: Option<f64>,
    /// USD per million output tokens.
    pub output_price: Option<f64>,
    /// USD per million input tokens written to the prompt cache.
    pub cache_write_price: Option<f64>,
    /// USD per web search the provider runs (`[tools] web_search`);
    /// default 0.01.
    pub web_search_price: Option<f64>,
}

// `[model_families.NAME]`: a later config layer's entry replaces one of
// the same name whole.
cogni_protocol::replaced_whole!(FamilyOverride);

/// Why no model family could be found for a model.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum FamilyError {
    /// No catalog family matches the model's name, and its provider names
    /// no default family.
    #[error("unknown model `{model}` for provider `{provider}`: cogni has no model family for it. Known model names start with: {known}. Declare it in cogni.toml:\n\n  [model_families.\"{model}\"]\n  inherit = \"generic\"\n  context_window = 32768\n\nor set `default_family = \"generic\"` in [model_providers.{provider}]")]
    Unknown {
        /// The model's name.
        model: String,
        /// The provider's id.
        provider: String,
        /// The name prefixes the catalog knows, comma-separated.
        known: String,
    },
    /// A `[model_families]` entry inherits from a family that does not
    /// exist.
    #[error("[model_families.\"{model}\"] inherits from `{inherit}`, which is not a known family; known families: {known}")]
    BadInherit {
        /// The entry's model name.
        model: String,
        /// The `inherit` value as given.
        inherit: String,
        /// The catalog's family names, comma-separated.
        known: String,
    },
}

fn lookup(model: &str) -> Option<&'static CatalogEntry> {
    // `openai/gpt-4o` (OpenRouter) and `library/qwen2.5:7b` (Ollama) match by
    // the part after the last slash.
    let base = model
        .rsplit('/')
        .next()
        .unwrap_or(model)
        .to_ascii_lowercase();
    CATALOG
        .iter()
        .filter(|e| base.starts_with(e.prefix))
        .max_by_key(|e| e.prefix.len())
}

fn by_family_name(name: &str) -> Option<&'static CatalogEntry> {
    if name == GENERIC.family {
        return Some(&GENERIC);
    }
    CATALOG.iter().find(|e| e.family == name)
}

/// The built-in catalog with `declared` families applied on top, in
/// catalog order, then declared models the catalog does not match.
pub fn catalog(declared: &BTreeMap<String, FamilyOverride>) -> Vec<(String, ModelFamily)> {
    let mut rows: Vec<(String, ModelFamily)> = CATALOG
        .iter()
        .filter(|e| e.prefix != "scripted")
        .map(|e| (format!("{}*", e.prefix), ModelFamily::from_entry(e)))
        .collect();
    for name in declared.keys() {
        if let Ok(family) = load_model_family(name, "", Some(GENERIC.family), declared) {
            rows.push((name.clone(), family));
        }
    }
    rows
}

fn known_families() -> String {
    let mut names: Vec<&str> = CATALOG.iter().map(|e| e.family).collect();
    names.push(GENERIC.family);
    names.sort_unstable();
    names.dedup();
    names.join(", ")
}

impl ModelFamily {
    fn from_entry(e: &CatalogEntry) -> Self {
        ModelFamily {
            family: e.family.to_string(),
            base_instructions_template: BASE_INSTRUCTIONS.to_string(),
            needs_special_apply_patch_instructions: e.special_apply_patch,
            supports_parallel_tool_calls: e.parallel,
            context_window: e.context_window,
            context_window_is_default: e.family == GENERIC.family,
            max_output_tokens: e.max_output_tokens,
            temperature: None,
            default_max_tokens: None,
            edit_tool: e.edit_tool,
            supports_reasoning: !matches!(e.reasoning, Reasoning::No),
            price: None,
            reasoning_effort: match e.reasoning {
                Reasoning::Default(effort) => Some(effort.to_string()),
                _ => None,
            },
            max_tokens_param: if COMPLETION_TOKENS_FAMILIES.contains(&e.family) {
                MaxTokensParam::MaxCompletionTokens
            } else {
                MaxTokensParam::MaxTokens
            },
            tools_in_prompt: false,
            context_strategy: None,
            tool_call_mode: ToolCallMode::Native,
            supports_images: IMAGE_FAMILIES.contains(&e.family),
        }
    }

    /// Whether tiktoken's o200k encoding counts this family's tokens (the
    /// OpenAI models); other families are estimated at 4 bytes a token.
    pub fn tiktoken_fits(&self) -> bool {
        TIKTOKEN_FAMILIES.contains(&self.family.as_str())
    }

    fn apply(&mut self, o: &FamilyOverride) {
        if let Some(v) = o.context_window {
            self.context_window = v;
            self.context_window_is_default = false;
        }
        if let Some(v) = o.max_output_tokens {
            self.max_output_tokens = Some(v);
        }
        if let Some(v) = o.supports_parallel_tool_calls {
            self.supports_parallel_tool_calls = v;
        }
        if let Some(v) = o.needs_special_apply_patch_instructions {
            self.needs_special_apply_patch_instructions = v;
        }
        if let Some(v) = &o.base_instructions {
            self.base_instructions_template = v.clone();
        }
        if let Some(v) = o.temperature {
            self.temperature = Some(v);
        }
        if let Some(v) = o.max_tokens {
            self.default_max_tokens = Some(v);
        }
        if let Some(v) = o.edit_tool {
            self.edit_tool = v;
        }
        if let Some(v) = o.supports_reasoning {
            self.supports_reasoning = v;
        }
        if let Some(v) = &o.reasoning_effort {
            self.reasoning_effort = Some(v.clone());
        }
        if let Some(v) = o.max_tokens_param {
            self.max_tokens_param = v;
        }
        if let Some(v) = o.tools_in_prompt {
            self.tools_in_prompt = v;
        }
        if let Some(v) = o.context_strategy {
            self.context_strategy = Some(v);
        }
        if let Some(v) = o.tool_call_mode {
            self.tool_call_mode = v;
        }
        if let Some(v) = o.supports_images {
            self.supports_images = v;
        }
        let priced = o.input_price.is_some()
            || o.cached_input_price.is_some()
            || o.output_price.is_some()
            || o.cache_write_price.is_some()
            || o.web_search_price.is_some();
        if priced {
            let base = self.price.unwrap_or(Price::new(0.0, 0.0, 0.0, 0.0));
            self.price = Some(Price {
                input: o.input_price.unwrap_or(base.input),
                cached_input: o.cached_input_price.unwrap_or(base.cached_input),
                output: o.output_price.unwrap_or(base.output),
                cache_write: o.cache_write_price.unwrap_or(base.cache_write),
                web_search: o.web_search_price.unwrap_or(base.web_search),
            });
        }
    }
}

/// Find the family of `model`: a declared family first (adjusting the
/// catalog entry it inherits or matches), then the catalog, then the
/// provider's default family.
pub fn load_model_family(
    model: &str,
    provider: &str,
    provider_default: Option<&str>,
    declared: &BTreeMap<String, FamilyOverride>,
) -> Result<ModelFamily, FamilyError> {
    let declared_entry = declared.get(model);
    let base = match declared_entry.and_then(|o| o.inherit.as_deref()) {
        Some(name) => Some(by_family_name(name).ok_or_else(|| FamilyError::BadInherit {
            model: model.to_string(),
            inherit: name.to_string(),
            known: known_families(),
        })?),
        None => lookup(model),
    };
    let base = match (base, declared_entry, provider_default) {
        (Some(e), _, _) => e,
        (None, Some(_), _) => &GENERIC,
        (None, None, Some(name)) => {
            by_family_name(name).ok_or_else(|| FamilyError::BadInherit {
                model: model.to_string(),
                inherit: name.to_string(),
                known: known_families(),
            })?
        }
        (None, None, None) => {
            return Err(FamilyError::Unknown {
                model: model.to_string(),
                provider: provider.to_string(),
                known: CATALOG
                    .iter()
                    .map(|e| e.prefix)
                    .filter(|p| *p != "scripted")
                    .collect::<Vec<_>>()
                    .join(", "),
            })
        }
    };
    let mut family = ModelFamily::from_entry(base);
    family.price = price_of(model);
    if let Some(o) = declared_entry {
        family.apply(o);
    }
    Ok(family)
}

#[cfg(test)]
mod tests {
    use super::*;
    use cogni_protocol::Usage;

    fn none() -> BTreeMap<String, FamilyOverride> {
        BTreeMap::new()
    }

    #[test]
    fn catalog_matches_longest_prefix_and_vendor_paths() {
        let f = load_model_family("gpt-4.1-mini", "openai", None, &none()).unwrap();
        assert_eq!(f.family, "gpt-4.1");
        assert!(f.needs_special_apply_patch_instructions);
        assert_eq!(f.edit_tool, EditTool::ApplyPatch);
        let f = load_model_family("gpt-5-codex", "openai", None, &none()).unwrap();
        assert_eq!(f.edit_tool, EditTool::ApplyPatchFreeform);
        assert!(!f.needs_special_apply_patch_instructions);
        let f = load_model_family("openai/gpt-4o", "openrouter", None, &none()).unwrap();
        assert_eq!(f.family, "gpt-4o");
        let f =
            load_model_family("anthropic/claude-sonnet-4", "openrouter", None, &none()).unwrap();
        assert_eq!(f.family, "claude");
        assert_eq!(f.context_window, 200_000);
        assert_eq!(f.edit_tool, EditTool::EditFile);
    }

    #[test]
    fn unknown_model_without_default_family_says_how_to_declare_it() {
        let err = load_model_family("my-model", "openai", None, &none()).unwrap_err();
        let msg = err.to_string();
        assert!(
            msg.contains("unknown model `my-model` for provider `openai`"),
            "{msg}"
        );
        assert!(msg.contains("[model_families.\"my-model\"]"), "{msg}");
        assert!(msg.contains("default_family"), "{msg}");
        assert!(
            msg.contains("gpt-4.1, gpt-4o"),
            "lists the known names: {msg}"
        );
    }

    #[test]
    fn provider_default_family_covers_unknown_models() {
        let f = load_model_family("my-model", "ollama", Some("generic"), &none()).unwrap();
        assert_eq!(f.family, "generic");
        let err = load_model_family("my-model", "x", Some("nope"), &none()).unwrap_err();
        assert!(matches!(err, FamilyError::BadInherit { .. }));
    }

    #[test]
    fn declared_family_overrides_catalog_fields() {
        let mut declared = none();
        declared.insert(
            "local-coder".to_string(),
            FamilyOverride {
                inherit: Some("qwen".into()),
                context_window: Some(65_536),
                supports_parallel_tool_calls: Some(false),
                base_instructions: Some("be brief".into()),
                temperature: Some(0.1),
                ..Default::default()
            },
        );
        let f = load_model_family("local-coder", "vllm", None, &declared).unwrap();
        assert_eq!(f.family, "qwen");
        assert_eq!(f.context_window, 65_536);
        assert!(!f.supports_parallel_tool_calls);
        assert_eq!(f.base_instructions_template, "be brief");
        assert_eq!(f.temperature, Some(0.1));
        assert!(!f.tools_in_prompt, "off unless declared");

        declared.insert(
            "gpt-4o".into(),
            FamilyOverride {
                context_window: Some(1000),
                ..Default::default()
            },
        );
        let f = load_model_family("gpt-4o", "openai", None, &declared).unwrap();
        assert_eq!(f.family, "gpt-4o");
        assert_eq!(f.context_window, 1000);
    }

    #[test]
    fn only_an_unconfigured_generic_window_is_a_default() {
        let f = load_model_family("my-model", "ollama", Some("generic"), &none()).unwrap();
        assert!(f.context_window_is_default);
        let f = load_model_family("qwen2.5-coder:7b", "ollama", Some("generic"), &none()).unwrap();
        assert!(!f.context_window_is_default, "the catalog knows qwen");

        let mut declared = none();
        declared.insert(
            "my-model".to_string(),
            FamilyOverride {
                inherit: Some("generic".into()),
                ..Default::default()
            },
        );
        let f = load_model_family("my-model", "ollama", None, &declared).unwrap();
        assert!(f.context_window_is_default, "nothing set the window");
        declared.insert(
            "my-model".to_string(),
            FamilyOverride {
                context_window: Some(8192),
                ..Default::default()
            },
        );
        let f = load_model_family("my-model", "ollama", None, &declared).unwrap();
        assert!(!f.context_window_is_default);
        assert_eq!(f.context_window, 8192);
    }

    #[test]
    fn prices_match_by_longest_prefix_and_can_be_overridden() {
        let f = load_model_family("gpt-4.1-mini", "openai", None, &none()).unwrap();
        assert_eq!(f.price.unwrap().input, 0.4);
        let usage = Usage {
            input_tokens: 1_000_000,
            cached_input_tokens: 500_000,
            output_tokens: 100_000,
            ..Default::default()
        };
        // 0.5M plain at 0.4 + 0.5M cached at 0.1 + 0.1M out at 1.6.
        let cost = f.price.unwrap().cost(&usage);
        assert!((cost - (0.2 + 0.05 + 0.16)).abs() < 1e-9, "{cost}");
        assert!(load_model_family("my-model", "x", Some("generic"), &none())
            .unwrap()
            .price
            .is_none());
        let mut declared = none();
        declared.insert(
            "my-model".into(),
            FamilyOverride {
                input_price: Some(1.0),
                output_price: Some(2.0),
                ..Default::default()
            },
        );
        let f = load_model_family("my-model", "x", Some("generic"), &declared).unwrap();
        assert_eq!(
            f.price.unwrap().cost(&Usage {
                input_tokens: 1_000_000,
                output_tokens: 1_000_000,
                ..Default::default()
            }),
            3.0
        );
    }

    #[test]
    fn tools_in_prompt_is_off_for_every_built_in_family_and_can_be_declared() {
        for (name, family) in catalog(&none()) {
            assert!(!family.tools_in_prompt, "{name}");
        }
        let mut declared = none();
        declared.insert(
            "local-coder".to_string(),
            FamilyOverride {
                inherit: Some("qwen".into()),
                tools_in_prompt: Some(true),
                ..Default::default()
            },
        );
        let f = load_model_family("local-coder", "vllm", None, &declared).unwrap();
        assert!(f.tools_in_prompt);
    }

    #[test]
    fn tool_call_mode_is_native_for_every_built_in_family_and_can_be_text() {
        for (name, family) in catalog(&none()) {
            assert_eq!(family.tool_call_mode, ToolCallMode::Native, "{name}");
        }
        let mut declared = none();
        declared.insert(
            "tiny".to_string(),
            FamilyOverride {
                inherit: Some("llama".into()),
                tool_call_mode: Some(ToolCallMode::Text),
                ..Default::default()
            },
        );
        let f = load_model_family("tiny", "ollama", None, &declared).unwrap();
        assert_eq!(f.tool_call_mode, ToolCallMode::Text);
        assert_eq!(f.family, "llama");
        let bad = toml::from_str::<FamilyOverride>("tool_call_mode = \"json\"").unwrap_err();
        assert!(bad.to_string().contains("tool_call_mode"), "{bad}");
        assert!(bad.to_string().contains("`native`"), "{bad}");
    }

    #[test]
    fn base_instructions_stay_small() {
        // Every byte goes into every request.
        assert!(
            BASE_INSTRUCTIONS.len() < 4096,
            "{}",
            BASE_INSTRUCTIONS.len()
        );
    }
}
