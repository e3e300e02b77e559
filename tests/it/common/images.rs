//! What the APIs check of an image in a request, for the mock: the media
//! types they take (PNG, JPEG, GIF, WebP), base64 that decodes, bytes that
//! are the type the request says, and (Anthropic) at most 5 MB of base64.

use base64::Engine as _;

/// The media types every API takes.
const TAKEN: &[&str] = &["image/png", "image/jpeg", "image/gif", "image/webp"];

/// What is wrong with an image of `media_type` whose base64 is `data`.
pub fn problem(media_type: &str, data: &str) -> Option<String> {
    if !TAKEN.contains(&media_type) {
        return Some(format!(
            "Image media type {media_type:?} is not supported; use one of {}",
            TAKEN.join(", ")
        ));
    }
    let Ok(bytes) = base64::engine::general_purpose::STANDARD.decode(data) else {
        return Some("The image data is not valid base64.".into());
    };
    let actual = match image::guess_format(&bytes) {
        Ok(image::ImageFormat::Png) => "image/png",
        Ok(image::ImageFormat::Jpeg) => "image/jpeg",
        Ok(image::ImageFormat::Gif) => "image/gif",
        Ok(image::ImageFormat::WebP) => "image/webp",
        _ => return Some("The image data is not a valid image.".into()),
    };
    if actual != media_type {
        return Some(format!(
            "Image does not match the provided media type {media_type} (it is {actual})"
        ));
    }
    None
}

/// What is wrong with a data URL (`data:MEDIA;base64,DATA`).
pub fn url_problem(url: &str) -> Option<String> {
    let Some((media_type, data)) = url
        .strip_prefix("data:")
        .and_then(|rest| rest.split_once(";base64,"))
    else {
        return Some(format!(
            "Invalid image URL: expected a base64-encoded data URL with an image MIME type (e.g. 'data:image/png;base64,...'), got {:?}",
            url.chars().take(40).collect::<String>()
        ));
    };
    problem(media_type, data)
}

/// `bytes` in base64, as the APIs carry images.
pub fn b64(bytes: &[u8]) -> String {
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

/// A PNG of `width` × `height` with varied pixels (so it compresses like a
/// screenshot does not: a worst case for size).
pub fn png(width: u32, height: u32) -> Vec<u8> {
    let img = image::RgbImage::from_fn(width, height, |x, y| {
        image::Rgb([
            (x * 7 % 251) as u8,
            (y * 13 % 241) as u8,
            ((x ^ y) % 239) as u8,
        ])
    });
    let mut out = std::io::Cursor::new(Vec::new());
    image::DynamicImage::ImageRgb8(img)
        .write_to(&mut out, image::ImageFormat::Png)
        .unwrap();
    out.into_inner()
}
