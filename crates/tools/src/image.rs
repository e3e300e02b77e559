//! Images for the model: read from a file or taken as bytes, checked,
//! downscaled to fit every wire API, and encoded once as base64.
//!
//! PNG, JPEG, GIF and WebP are taken (by their bytes, not their name).
//! An image within [`MAX_EDGE`] pixels and [`MAX_BYTES`] bytes goes as it
//! is; a larger one is decoded (with limits on its size and on what
//! decoding may allocate, so a crafted file cannot take the machine's
//! memory), scaled down to fit, and encoded again: PNG stays PNG (GIF and
//! WebP become PNG, an animation its first frame), JPEG stays JPEG, and a
//! result still too large becomes a JPEG. The limits are the strictest of
//! the APIs cogni speaks: Anthropic takes at most 5 MB of base64 and
//! scales anything past 1568 pixels down itself; OpenAI scales to 2048 and
//! then 768 on the short side.
//!
//! Decoding and scaling use the `image` crate (with only these four
//! formats built in).

use base64::Engine as _;
use cogni_protocol::{ContextFile, Image};
use image::{DynamicImage, ImageFormat, ImageReader};
use sha2::{Digest, Sha256};
use std::io::Cursor;
use std::path::Path;
use std::sync::Arc;

/// The longest edge an image is sent with, in pixels.
pub const MAX_EDGE: u32 = 1568;

/// The most bytes an image is sent with (5 MB of base64).
pub const MAX_BYTES: usize = 3_750_000;

/// The largest file read as an image.
pub const MAX_FILE_BYTES: u64 = 64 * 1024 * 1024;

/// Pixels on an edge beyond which an image is not decoded at all.
const MAX_DECODE_EDGE: u32 = 16_384;

/// The most memory decoding one image may take.
const MAX_DECODE_ALLOC: u64 = 512 * 1024 * 1024;

/// An image ready for the model, and what was done to it.
#[derive(Debug, Clone)]
pub struct Prepared {
    /// The image as it is sent.
    pub image: Image,
    /// When it was scaled down (or encoded again) to fit: its width,
    /// height and bytes as given.
    pub scaled_from: Option<(u32, u32, usize)>,
}

impl Prepared {
    /// Whether it was scaled down (or encoded again) to fit.
    pub fn downscaled(&self) -> bool {
        self.scaled_from.is_some()
    }

    /// What was sent: `image/png, 1280×720, 84 KB`, and `, downscaled
    /// from 3840×2160, 4.1 MB` when it was.
    pub fn detail(&self) -> String {
        let mut text = self.image.detail();
        if let Some((w, h, bytes)) = self.scaled_from {
            text.push_str(&format!(
                ", downscaled from {w}×{h}, {:.1} MB",
                bytes as f64 / (1024.0 * 1024.0)
            ));
        }
        text
    }

    /// What the user is shown: `shot.png (` [`Prepared::detail`] `)`.
    pub fn summary(&self) -> String {
        format!("{} ({})", self.image.name, self.detail())
    }
}

/// The images at `paths` (relative to `cwd`), for the user's message;
/// the first that cannot be attached is the error, naming it.
pub fn attach(paths: &[String], cwd: &Path) -> Result<Vec<Prepared>, String> {
    paths
        .iter()
        .map(|name| from_file(&cwd.join(name), name).map_err(|e| format!("{name}: {e}")))
        .collect()
}

/// Whether the file at `path` starts like an image this module takes.
pub fn looks_like_image(path: &Path) -> bool {
    crate::fs::read_head(path, 16)
        .ok()
        .and_then(|head| image::guess_format(&head.bytes).ok())
        .is_some_and(|f| {
            matches!(
                f,
                ImageFormat::Png | ImageFormat::Jpeg | ImageFormat::Gif | ImageFormat::WebP
            )
        })
}

impl Prepared {
    /// How the attachment is reported (the `context` event).
    pub fn context_file(&self) -> ContextFile {
        ContextFile {
            path: self.image.name.clone(),
            kind: "image".into(),
            bytes: self.image.data.len() / 4 * 3,
            truncated: false,
            detail: Some(self.detail()),
        }
    }
}

/// The image in the regular file at `path` (a FIFO or a device is
/// refused without waiting on it), named `name`. Blocking.
pub fn from_file(path: &Path, name: &str) -> Result<Prepared, String> {
    let bytes = crate::fs::read_limited(path, MAX_FILE_BYTES).map_err(|e| e.to_string())?;
    from_bytes(&bytes, name)
}

/// The image in the regular file of `target` (resolved inside the
/// workspace by the caller), named `name`. Blocking.
pub(crate) fn from_target(target: &crate::paths::Target, name: &str) -> Result<Prepared, String> {
    let bytes = crate::fs::read_target(target, Path::new(name), MAX_FILE_BYTES)
        .map_err(|e| e.to_string())?;
    from_bytes(&bytes, name)
}

/// The image in `bytes` (its format read from them), named `name`.
/// Blocking: decoding and scaling a large image takes a while.
pub fn from_bytes(bytes: &[u8], name: &str) -> Result<Prepared, String> {
    let format = image::guess_format(bytes).ok();
    let media_type = match format {
        Some(ImageFormat::Png) => "image/png",
        Some(ImageFormat::Jpeg) => "image/jpeg",
        Some(ImageFormat::Gif) => "image/gif",
        Some(ImageFormat::WebP) => "image/webp",
        _ => {
            return Err(format!(
                "{name} is not a PNG, JPEG, GIF or WebP image (by its first bytes)"
            ))
        }
    };
    let (width, height) = reader(bytes)?
        .into_dimensions()
        .map_err(|e| unreadable(name, e))?;
    if width.max(height) <= MAX_EDGE && bytes.len() <= MAX_BYTES {
        return Ok(Prepared {
            image: image(media_type, bytes, width, height, name),
            scaled_from: None,
        });
    }
    if width.max(height) > MAX_DECODE_EDGE {
        return Err(format!(
            "{name} is {width}×{height} pixels: larger than the {MAX_DECODE_EDGE} pixels a side \
             cogni decodes; scale it down first"
        ));
    }
    let decoded = reader(bytes)?.decode().map_err(|e| unreadable(name, e))?;
    let scaled = if width.max(height) > MAX_EDGE {
        // Area averaging: as good as a filter for shrinking, and six
        // times faster than a triangle filter on a 2880×1800 screenshot.
        decoded.thumbnail(MAX_EDGE, MAX_EDGE)
    } else {
        decoded
    };
    let jpeg = format == Some(ImageFormat::Jpeg);
    let mut encoded = encode(&scaled, jpeg)?;
    if !jpeg && encoded.len() > MAX_BYTES {
        encoded = encode(&scaled, true)?;
    }
    if encoded.len() > MAX_BYTES {
        return Err(format!(
            "{name} is still {} bytes after scaling it down; the APIs take at most {MAX_BYTES}",
            encoded.len()
        ));
    }
    let media_type = if encoded.starts_with(b"\xff\xd8") {
        "image/jpeg"
    } else {
        "image/png"
    };
    Ok(Prepared {
        image: image(media_type, &encoded, scaled.width(), scaled.height(), name),
        scaled_from: Some((width, height, bytes.len())),
    })
}

/// Why `name` could not be read, for the user or the model.
fn unreadable(name: &str, error: image::ImageError) -> String {
    match error {
        image::ImageError::Limits(_) => format!(
            "{name} is larger than cogni decodes (at most {MAX_DECODE_EDGE} pixels a side and \
             {} MiB decoded); scale it down first",
            MAX_DECODE_ALLOC / (1024 * 1024)
        ),
        other => format!("{name} is not a readable image: {other}"),
    }
}

/// A reader of `bytes` that refuses to allocate without bound.
fn reader(bytes: &[u8]) -> Result<ImageReader<Cursor<&[u8]>>, String> {
    let mut reader = ImageReader::new(Cursor::new(bytes))
        .with_guessed_format()
        .map_err(|e| e.to_string())?;
    let mut limits = image::Limits::default();
    limits.max_image_width = Some(MAX_DECODE_EDGE);
    limits.max_image_height = Some(MAX_DECODE_EDGE);
    limits.max_alloc = Some(MAX_DECODE_ALLOC);
    reader.limits(limits);
    Ok(reader)
}

/// `image` as PNG, or as JPEG (quality 85, no alpha) when `jpeg`.
fn encode(image: &DynamicImage, jpeg: bool) -> Result<Vec<u8>, String> {
    let mut out = Cursor::new(Vec::new());
    let written = if jpeg {
        let rgb = DynamicImage::ImageRgb8(image.to_rgb8());
        let encoder = image::codecs::jpeg::JpegEncoder::new_with_quality(&mut out, 85);
        rgb.write_with_encoder(encoder)
    } else {
        image.write_to(&mut out, ImageFormat::Png)
    };
    written.map_err(|e| format!("cannot encode the scaled image: {e}"))?;
    Ok(out.into_inner())
}

fn image(media_type: &str, bytes: &[u8], width: u32, height: u32, name: &str) -> Image {
    let hash: String = Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    Image {
        media_type: media_type.to_string(),
        hash,
        width,
        height,
        name: name.to_string(),
        data: Arc::from(base64::engine::general_purpose::STANDARD.encode(bytes)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn png(width: u32, height: u32) -> Vec<u8> {
        let image = image::RgbImage::from_fn(width, height, |x, y| {
            image::Rgb([(x % 256) as u8, (y % 256) as u8, ((x * y) % 256) as u8])
        });
        let mut out = Cursor::new(Vec::new());
        DynamicImage::ImageRgb8(image)
            .write_to(&mut out, ImageFormat::Png)
            .unwrap();
        out.into_inner()
    }

    #[test]
    fn a_small_image_goes_as_it_is() {
        let bytes = png(40, 30);
        let prepared = from_bytes(&bytes, "shot.png").unwrap();
        assert!(!prepared.downscaled());
        assert_eq!((prepared.image.width, prepared.image.height), (40, 30));
        assert_eq!(prepared.image.media_type, "image/png");
        let back = base64::engine::general_purpose::STANDARD
            .decode(&*prepared.image.data)
            .unwrap();
        assert_eq!(back, bytes);
        assert_eq!(prepared.image.hash.len(), 64);
        assert!(prepared
            .summary()
            .starts_with("shot.png (image/png, 40×30, "));
    }

    #[test]
    fn a_large_image_is_scaled_to_fit() {
        let prepared = from_bytes(&png(3200, 1800), "big.png").unwrap();
        assert!(prepared.downscaled());
        assert_eq!((prepared.image.width, prepared.image.height), (1568, 882));
        assert!(
            prepared.summary().contains("downscaled from 3200×1800"),
            "{}",
            prepared.summary()
        );
        assert!(prepared.image.data.len() / 4 * 3 <= MAX_BYTES);
    }

    #[test]
    fn what_is_not_an_image_or_too_large_is_refused_with_the_reason() {
        let err = from_bytes(b"%PDF-1.7 ...", "doc.pdf").unwrap_err();
        assert!(err.contains("not a PNG, JPEG, GIF or WebP"), "{err}");
        let mut truncated = png(50, 50);
        truncated.truncate(40);
        assert!(from_bytes(&truncated, "cut.png").is_err());
        // A header claiming 100,000 × 100,000 pixels is not decoded (its
        // checksum is wrong here; the hostile case view-image-bomb-and-fifo
        // has a well-formed one, refused for its size).
        let mut huge = png(1, 1);
        huge[16..20].copy_from_slice(&100_000u32.to_be_bytes());
        huge[20..24].copy_from_slice(&100_000u32.to_be_bytes());
        let err = from_bytes(&huge, "bomb.png").unwrap_err();
        assert!(err.contains("bomb.png"), "{err}");
    }
}
