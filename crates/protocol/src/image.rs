//! Images in a conversation: attached by the user, or returned by a tool
//! (`view_image`, an MCP tool).
//!
//! An [`Image`] holds its bytes in memory, shared (history is cloned for
//! every request), and serialises without them: a session file keeps
//! each image's bytes once, in an `image` record keyed by the hash, and
//! fills them back in when the session is read ([`Image::hash`]).

use serde::{Deserialize, Serialize};
use std::sync::Arc;

/// One image, as the model gets it (already downscaled to the limits of
/// the provider's API).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Image {
    /// `image/png`, `image/jpeg`, `image/gif` or `image/webp`.
    pub media_type: String,
    /// SHA-256 of the encoded bytes, hex: the key they are kept under.
    pub hash: String,
    /// Width in pixels.
    pub width: u32,
    /// Height in pixels.
    pub height: u32,
    /// Where it came from, for people: a file name, `clipboard`, a tool.
    #[serde(default)]
    pub name: String,
    /// The encoded bytes in base64 (as every API and a session file take
    /// them: encoded once); not serialised with the image (see the module).
    #[serde(skip)]
    pub data: Arc<str>,
}

impl Image {
    /// The image's bytes are not here (read from a record that did not
    /// have them).
    pub fn is_missing(&self) -> bool {
        self.data.is_empty()
    }

    /// Tokens the image costs in a request, as each API counts them
    /// (Anthropic: width × height / 750; OpenAI's high detail: 85 plus
    /// 170 per 512-pixel tile of the image fitted in 2048 × 2048 with its
    /// short side at most 768). `anthropic` picks the first.
    pub fn tokens(&self, anthropic: bool) -> u64 {
        let (w, h) = (u64::from(self.width.max(1)), u64::from(self.height.max(1)));
        if anthropic {
            return (w * h).div_ceil(750).max(1);
        }
        let fit = |w: u64, h: u64, max: u64| {
            let long = w.max(h);
            if long > max {
                (w * max / long, h * max / long)
            } else {
                (w, h)
            }
        };
        let (w, h) = fit(w, h, 2048);
        let short = w.min(h);
        let (w, h) = if short > 768 {
            (w * 768 / short, h * 768 / short)
        } else {
            (w, h)
        };
        85 + 170 * w.div_ceil(512) * h.div_ceil(512)
    }

    /// Its type, size and bytes: `image/png, 1280×720, 84 KB`.
    pub fn detail(&self) -> String {
        format!(
            "{}, {}×{}, {}",
            self.media_type,
            self.width,
            self.height,
            human_bytes(self.data.len() / 4 * 3)
        )
    }

    /// A one-line description for people and for notes in history:
    /// `shot.png (image/png, 1280×720, 84 KB)`.
    pub fn describe(&self) -> String {
        let name = if self.name.is_empty() {
            "image"
        } else {
            &self.name
        };
        format!("{name} ({})", self.detail())
    }
}

/// `84 KB`, `2.1 MB`.
fn human_bytes(n: usize) -> String {
    if n >= 1024 * 1024 {
        format!("{:.1} MB", n as f64 / (1024.0 * 1024.0))
    } else {
        format!("{} KB", n.div_ceil(1024))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn image(width: u32, height: u32) -> Image {
        Image {
            media_type: "image/png".into(),
            hash: "h".into(),
            width,
            height,
            name: "shot.png".into(),
            data: Arc::from("A".repeat(2048)),
        }
    }

    #[test]
    fn tokens_follow_each_apis_rule() {
        // Anthropic's example: 1092 × 1092 is about 1590 tokens.
        assert_eq!(image(1092, 1092).tokens(true), 1590);
        // OpenAI's examples: 1024 × 1024 is 765; 2048 × 4096 is 1105.
        assert_eq!(image(1024, 1024).tokens(false), 765);
        assert_eq!(image(2048, 4096).tokens(false), 1105);
    }

    #[test]
    fn bytes_are_not_serialised() {
        let json = serde_json::to_string(&image(10, 10)).unwrap();
        assert!(!json.contains("data"), "{json}");
        let back: Image = serde_json::from_str(&json).unwrap();
        assert!(back.is_missing());
        assert_eq!(back.describe(), "shot.png (image/png, 10×10, 0 KB)");
    }
}
