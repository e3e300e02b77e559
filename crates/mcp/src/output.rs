//! A `tools/call` result as the model reads it: text as it is, images as
//! images (PNG, JPEG, GIF and WebP, scaled down as attached ones are, with
//! a line that says so; others, and audio, as a note),
//! embedded resources (their text, or a note for binary ones), resource
//! links, and the structured content as JSON unless a text block already
//! says the same. Read from the result's JSON, so every content type a
//! server may send is handled, known or not.

use base64::Engine as _;
use cogni_protocol::Image;
use serde_json::Value;

/// A tool's result as the model gets it.
#[derive(Debug)]
pub struct Rendered {
    /// The text.
    pub text: String,
    /// The server marked the result an error.
    pub is_error: bool,
    /// The images it returned that the model can look at.
    pub images: Vec<Image>,
}

/// `result` (a `CallToolResult` as JSON) as the model reads it. Blocking:
/// a large image is decoded and scaled down.
pub fn render(result: &Value) -> Rendered {
    let mut parts: Vec<String> = Vec::new();
    let mut images = Vec::new();
    let blocks = result["content"]
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or(&[]);
    for block in blocks {
        match image(block) {
            Some(Ok(prepared)) => {
                parts.push(format!("[image: {}]", prepared.summary()));
                images.push(prepared.image);
            }
            Some(Err(why)) => parts.push(format!(
                "[image: {}, not shown: {why}]",
                block["mimeType"].as_str().unwrap_or("unknown type")
            )),
            None => parts.push(block_text(block)),
        }
    }
    if let Some(structured) = result.get("structuredContent").filter(|v| !v.is_null()) {
        let text: String = blocks
            .iter()
            .filter(|b| b["type"] == "text")
            .filter_map(|b| b["text"].as_str())
            .collect();
        if !says(&text, structured) {
            parts.push(format!(
                "structured content: {}",
                serde_json::to_string_pretty(structured).unwrap_or_default()
            ));
        }
    }
    let is_error = result["isError"].as_bool().unwrap_or(false);
    let text = if parts.is_empty() {
        "(the tool returned no content)".to_string()
    } else {
        parts.join("\n")
    };
    Rendered {
        text,
        is_error,
        images,
    }
}

/// An image block as an image the model can look at; `None` for other
/// blocks.
fn image(block: &Value) -> Option<Result<cogni_tools::image::Prepared, String>> {
    if block["type"] != "image" {
        return None;
    }
    let data = block["data"].as_str().unwrap_or_default();
    Some(
        base64::engine::general_purpose::STANDARD
            .decode(data)
            .map_err(|e| format!("its data is not base64 ({e})"))
            .and_then(|bytes| cogni_tools::image::from_bytes(&bytes, "tool image")),
    )
}

/// Whether `text` already says what `value` holds: it is `value` as JSON,
/// or every string and number in `value` is in it (servers are asked to
/// send structured content as text too, often as a rendering of it).
fn says(text: &str, value: &Value) -> bool {
    if serde_json::from_str::<Value>(text).is_ok_and(|v| &v == value) {
        return true;
    }
    fn leaves_said(text: &str, value: &Value) -> bool {
        match value {
            Value::String(s) => text.contains(s.as_str()),
            Value::Number(n) => text.contains(&n.to_string()),
            Value::Array(items) => items.iter().all(|v| leaves_said(text, v)),
            Value::Object(map) => map.values().all(|v| leaves_said(text, v)),
            Value::Bool(_) | Value::Null => true,
        }
    }
    !text.is_empty() && leaves_said(text, value)
}

fn block_text(block: &Value) -> String {
    let mime = |v: &Value| v["mimeType"].as_str().unwrap_or("unknown type").to_string();
    let size = |v: &Value, key: &str| {
        // Base64: four characters for three bytes.
        v[key].as_str().map_or(0, |s| s.len() / 4 * 3)
    };
    match block["type"].as_str().unwrap_or_default() {
        "text" => block["text"].as_str().unwrap_or_default().to_string(),
        kind @ "audio" => format!(
            "[{kind}: {}, about {} bytes, not shown]",
            mime(block),
            size(block, "data")
        ),
        "resource" => {
            let resource = &block["resource"];
            let uri = resource["uri"].as_str().unwrap_or("?");
            match resource["text"].as_str() {
                Some(text) => format!("[resource {uri}]\n{text}"),
                None => format!(
                    "[resource {uri}: {}, about {} bytes, not shown]",
                    mime(resource),
                    size(resource, "blob")
                ),
            }
        }
        "resource_link" => {
            let uri = block["uri"].as_str().unwrap_or("?");
            let name = block["name"].as_str().unwrap_or_default();
            match block["description"].as_str() {
                Some(d) => format!("[resource link {uri}: {name}: {d}]"),
                None => format!("[resource link {uri}: {name}]"),
            }
        }
        other => format!(
            "[{other} content: {}]",
            serde_json::to_string(block).unwrap_or_default()
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn every_kind_of_content_is_told() {
        let result = json!({
            "content": [
                {"type": "text", "text": "hello"},
                {"type": "image", "data": "AAAAAAAA", "mimeType": "image/png"},
                {"type": "audio", "data": "AAAA", "mimeType": "audio/wav"},
                {"type": "resource", "resource": {"uri": "file:///a.txt", "text": "inside"}},
                {"type": "resource", "resource": {"uri": "file:///b.bin", "blob": "AAAA", "mimeType": "application/gzip"}},
                {"type": "resource_link", "uri": "test://1", "name": "one", "description": "the first"},
                {"type": "hologram", "x": 1}
            ],
            "isError": true
        });
        let Rendered {
            text,
            is_error,
            images,
        } = render(&result);
        assert!(is_error);
        assert!(images.is_empty());
        assert_eq!(
            text,
            "hello\n\
             [image: image/png, not shown: tool image is not a PNG, JPEG, GIF or WebP image (by its first bytes)]\n\
             [audio: audio/wav, about 3 bytes, not shown]\n\
             [resource file:///a.txt]\ninside\n\
             [resource file:///b.bin: application/gzip, about 3 bytes, not shown]\n\
             [resource link test://1: one: the first]\n\
             [hologram content: {\"type\":\"hologram\",\"x\":1}]"
        );
    }

    #[test]
    fn structured_content_is_shown_once() {
        let structured = json!({"temperature": 22.5});
        let echoed = json!({
            "content": [{"type": "text", "text": "{\"temperature\": 22.5}"}],
            "structuredContent": structured
        });
        assert_eq!(render(&echoed).text, "{\"temperature\": 22.5}");
        let rendered = json!({
            "content": [{"type": "text", "text": "It is 22.5 degrees"}],
            "structuredContent": structured
        });
        assert_eq!(render(&rendered).text, "It is 22.5 degrees");
        let other = json!({
            "content": [{"type": "text", "text": "see the data"}],
            "structuredContent": structured
        });
        assert_eq!(
            render(&other).text,
            "see the data\nstructured content: {\n  \"temperature\": 22.5\n}"
        );
        let alone = json!({"structuredContent": structured});
        let rendered = render(&alone);
        assert_eq!(
            (rendered.text.as_str(), rendered.is_error),
            ("structured content: {\n  \"temperature\": 22.5\n}", false)
        );
        assert_eq!(
            render(&json!({"content": []})).text,
            "(the tool returned no content)"
        );
    }

    #[test]
    fn an_image_the_model_can_look_at_is_returned_as_one() {
        let mut png = std::io::Cursor::new(Vec::new());
        image::DynamicImage::ImageRgb8(image::RgbImage::new(3, 2))
            .write_to(&mut png, image::ImageFormat::Png)
            .unwrap();
        let data = base64::engine::general_purpose::STANDARD.encode(png.into_inner());
        let result = json!({"content": [
            {"type": "text", "text": "the chart"},
            {"type": "image", "data": data, "mimeType": "image/png"},
        ]});
        let rendered = render(&result);
        assert_eq!(rendered.images.len(), 1);
        assert_eq!(rendered.images[0].width, 3);
        assert!(
            rendered
                .text
                .starts_with("the chart\n[image: tool image (image/png, 3×2, "),
            "{}",
            rendered.text
        );
    }
}
