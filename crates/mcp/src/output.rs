//! A `tools/call` result as the model reads it: text as it is, images and
//! audio as a note (the model gets no pixels through a tool output),
//! embedded resources (their text, or a note for binary ones), resource
//! links, and the structured content as JSON unless a text block already
//! says the same. Read from the result's JSON, so every content type a
//! server may send is handled, known or not.

use serde_json::Value;

/// The text of `result` (a `CallToolResult` as JSON) and whether the
/// server marked it an error.
pub fn render(result: &Value) -> (String, bool) {
    let mut parts: Vec<String> = Vec::new();
    let blocks = result["content"]
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or(&[]);
    for block in blocks {
        parts.push(block_text(block));
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
    (text, is_error)
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
        kind @ ("image" | "audio") => format!(
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
        let (text, is_error) = render(&result);
        assert!(is_error);
        assert_eq!(
            text,
            "hello\n\
             [image: image/png, about 6 bytes, not shown]\n\
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
        assert_eq!(render(&echoed).0, "{\"temperature\": 22.5}");
        let rendered = json!({
            "content": [{"type": "text", "text": "It is 22.5 degrees"}],
            "structuredContent": structured
        });
        assert_eq!(render(&rendered).0, "It is 22.5 degrees");
        let other = json!({
            "content": [{"type": "text", "text": "see the data"}],
            "structuredContent": structured
        });
        assert_eq!(
            render(&other).0,
            "see the data\nstructured content: {\n  \"temperature\": 22.5\n}"
        );
        let alone = json!({"structuredContent": structured});
        assert_eq!(
            render(&alone),
            (
                "structured content: {\n  \"temperature\": 22.5\n}".to_string(),
                false
            )
        );
        assert_eq!(
            render(&json!({"content": []})).0,
            "(the tool returned no content)"
        );
    }
}
