//! `@path` in a message attaches that file (or a summary of that
//! directory) as context, all attachments together capped at
//! `max_context_bytes` with a `[truncated]` note ([`attach`]); an image
//! file (PNG, JPEG, GIF, WebP, by its first bytes) is attached as an image.

use crate::tools::attach;
use crate::tools::image::{self, Prepared};
use std::path::Path;

/// A message with what its `@path`s attach.
pub struct Expanded {
    /// The message with the text attachments appended.
    pub message: String,
    /// What was attached, as shown to the user: paths, and images with
    /// their size.
    pub attached: Vec<String>,
    /// The images, for the message.
    pub images: Vec<Prepared>,
    /// Images that could not be attached, with why.
    pub problems: Vec<String>,
}

/// The message with its attachments.
pub fn expand(text: &str, cwd: &Path, max_bytes: usize) -> Expanded {
    let names: Vec<String> = text
        .split_whitespace()
        .filter_map(|word| word.strip_prefix('@'))
        // Trailing punctuation is not part of the path ("see @a.rs,").
        .map(|raw| {
            raw.trim_end_matches([',', '.', ';', ':', ')', '!', '?'])
                .to_string()
        })
        .filter(|name| !name.is_empty())
        .collect();
    let (pictures, names): (Vec<String>, Vec<String>) = names
        .into_iter()
        .partition(|name| image::looks_like_image(&cwd.join(name)));
    let mut images = Vec::new();
    let mut problems = Vec::new();
    for name in pictures {
        match image::from_file(&cwd.join(&name), &name) {
            Ok(prepared) => images.push(prepared),
            Err(e) => problems.push(format!("@{name}: {e}")),
        }
    }
    let (appendix, attached) = attach::attach(&names, cwd, max_bytes);
    Expanded {
        message: format!("{text}{appendix}"),
        attached: attached
            .into_iter()
            .map(|a| a.path)
            .chain(images.iter().map(Prepared::summary))
            .collect(),
        images,
        problems,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn files_and_directories_are_attached_within_the_cap() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("a.txt"), "hello").unwrap();
        std::fs::write(dir.path().join("big.txt"), "x".repeat(100)).unwrap();
        std::fs::create_dir(dir.path().join("sub")).unwrap();
        std::fs::write(dir.path().join("sub/f.rs"), "").unwrap();
        let Expanded {
            message: text,
            attached,
            ..
        } = expand("see @a.txt, and @sub @missing", dir.path(), 1000);
        assert_eq!(attached, ["a.txt", "sub"]);
        assert!(text.starts_with("see @a.txt, and @sub @missing\n\n"));
        assert!(text.contains("<attached file=\"a.txt\">\nhello\n</attached>"));
        assert!(text.contains("<attached directory=\"sub\">\n1 entries:\nf.rs (0 B)\n</attached>"));
        let text = expand("@big.txt", dir.path(), 10).message;
        assert!(
            text.contains(&format!("{}\n[truncated]", "x".repeat(10))),
            "{text}"
        );
    }

    #[test]
    fn an_image_is_attached_as_an_image() {
        let dir = tempfile::tempdir().unwrap();
        let img = ::image::RgbImage::from_pixel(4, 3, ::image::Rgb([200, 0, 0]));
        ::image::DynamicImage::ImageRgb8(img)
            .save(dir.path().join("shot.png"))
            .unwrap();
        std::fs::write(dir.path().join("fake.png"), "not an image").unwrap();
        let expanded = expand("what is @shot.png and @fake.png?", dir.path(), 1000);
        assert_eq!(expanded.images.len(), 1);
        assert!(
            expanded.attached[1].starts_with("shot.png (image/png, 4×3, "),
            "{:?}",
            expanded.attached
        );
        // A file named .png that is not one is attached as text.
        assert_eq!(expanded.attached[0], "fake.png");
        assert!(expanded.message.contains("<attached file=\"fake.png\">"));
        assert!(!expanded.message.contains("shot.png\">"));
    }
}
