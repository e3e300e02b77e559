//! Images on the wire: what every API's shape shares.

use cogni_protocol::{Content, HistoryItem, Image};
use serde::{Serialize, Serializer};
use std::fmt;

/// `data:MEDIA;base64,DATA`, written straight into the request body (the
/// base64 is not copied into a string of its own first).
pub(crate) struct DataUrl<'a>(pub(crate) &'a Image);

impl fmt::Display for DataUrl<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "data:{};base64,{}", self.0.media_type, self.0.data)
    }
}

impl Serialize for DataUrl<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

/// The image's base64 bytes, for APIs that take them bare (Anthropic's
/// `source.data`, Ollama's `images`).
pub(crate) fn base64(image: &Image) -> &str {
    &image.data
}

/// The text put before images a tool returned, for APIs whose tool
/// results cannot hold images (they go in a user message after the
/// results).
pub(crate) const TOOL_IMAGES_NOTE: &str = "The images the tool calls above returned:";

/// Whether `input` holds an image (attached, or in a tool's output).
pub fn has_images(input: &[HistoryItem]) -> bool {
    input.iter().any(|item| match &item.content {
        Content::Image(_) => true,
        Content::ToolOutput(output) => !output.images.is_empty(),
        _ => false,
    })
}
