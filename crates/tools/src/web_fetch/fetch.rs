//! One GET with its redirects: every hop checked by [`Reach`], no cookies,
//! no credentials, no proxy; the body read up to a cap and sorted into
//! HTML, text or binary.

use super::guard::{Reach, Refused, Resolver};
use cogni_protocol::error_chain;
use reqwest::header::{HeaderMap, HeaderValue, ACCEPT, CONTENT_LENGTH, CONTENT_TYPE, LOCATION};
use reqwest::{Client, Response, StatusCode};
use std::error::Error as _;
use std::sync::Arc;
use std::time::Duration;
use url::Url;

/// The longest a connection may take to open.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// The longest the server may stay silent once connected.
const IDLE_TIMEOUT: Duration = Duration::from_secs(20);
/// What the client asks for: Markdown or HTML first, then any text.
const ACCEPT_TYPES: &str =
    "text/markdown, text/html;q=0.9, application/xhtml+xml;q=0.9, text/plain;q=0.8, */*;q=0.5";
/// A NUL byte in this many first bytes of a response that names no type
/// marks it binary.
const SNIFF_BYTES: usize = 8 * 1024;

/// The HTTP client of `web_fetch`: it follows no redirect itself (each is
/// checked first), keeps no cookies, uses no proxy (a proxy would resolve
/// names where the checks cannot see, and the user's proxy credentials are
/// not web_fetch's to send), sends no Referer, and connects only to the
/// addresses its resolver let through. Its connect and idle timeouts
/// apply when they are shorter than `timeout`, the call's, which covers
/// them otherwise.
pub fn client(reach: &Reach, timeout: Duration) -> Result<Client, String> {
    let mut headers = HeaderMap::new();
    headers.insert(ACCEPT, HeaderValue::from_static(ACCEPT_TYPES));
    let mut builder = Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .no_proxy()
        .referer(false)
        .dns_resolver(Arc::new(Resolver {
            allowed: reach.allowed.clone(),
        }))
        .user_agent(concat!("cogni/", env!("CARGO_PKG_VERSION"), " (web_fetch)"))
        .default_headers(headers);
    if CONNECT_TIMEOUT < timeout {
        builder = builder.connect_timeout(CONNECT_TIMEOUT);
    }
    if IDLE_TIMEOUT < timeout {
        builder = builder.read_timeout(IDLE_TIMEOUT);
    }
    builder
        .build()
        .map_err(|e| format!("could not build the HTTP client: {}", error_chain(&e)))
}

/// What a response holds, by its type (or, naming none, by its first
/// bytes).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// HTML or XHTML: converted to Markdown.
    Html,
    /// Text to show as it is: plain text, Markdown, JSON, XML, code.
    Text,
    /// Anything else: not shown.
    Binary,
}

/// The kind of content `mime` (a Content-Type's type, lower case, without
/// parameters) names; `None` when it names none that tells
/// (`application/octet-stream` or no type at all).
pub fn kind_of(mime: &str) -> Option<Kind> {
    const TEXT_APPS: &[&str] = &[
        "json",
        "xml",
        "javascript",
        "ecmascript",
        "x-javascript",
        "x-sh",
        "x-shellscript",
        "toml",
        "yaml",
        "x-yaml",
        "x-ndjson",
        "graphql",
        "sql",
        "x-tex",
        "x-httpd-php",
    ];
    let (top, sub) = mime.split_once('/')?;
    Some(match (top, sub) {
        ("text", "html") | ("application", "xhtml+xml") => Kind::Html,
        ("text", _) => Kind::Text,
        ("application", "octet-stream") => return None,
        ("application", sub)
            if TEXT_APPS.contains(&sub) || sub.ends_with("+json") || sub.ends_with("+xml") =>
        {
            Kind::Text
        }
        _ => Kind::Binary,
    })
}

/// The kind of a body whose type did not tell, from its first bytes.
pub fn sniff(body: &[u8]) -> Kind {
    let head = &body[..body.len().min(SNIFF_BYTES)];
    if memchr::memchr(0, head).is_some() {
        return Kind::Binary;
    }
    let start = String::from_utf8_lossy(&head[..head.len().min(256)]).to_ascii_lowercase();
    let start = start.trim_start_matches('\u{feff}').trim_start();
    if start.starts_with("<!doctype html") || start.starts_with("<html") {
        Kind::Html
    } else {
        Kind::Text
    }
}

/// A response as far as it was read.
#[derive(Debug)]
pub struct Fetched {
    /// The URL that answered (after the redirects).
    pub url: Url,
    /// Its status.
    pub status: StatusCode,
    /// Its Content-Type as sent (`None`: none).
    pub content_type: Option<String>,
    /// What the body holds.
    pub kind: Kind,
    /// The body, or its head: at most the cap of its kind.
    pub body: Vec<u8>,
    /// The body's length as the server announced it, when it did.
    pub length: Option<u64>,
    /// Whether `body` is all of it (never for a binary body, which is not
    /// read).
    pub complete: bool,
}

/// How much of a body is read.
#[derive(Debug, Clone, Copy)]
pub struct Caps {
    /// Bytes of text (what the model is shown at most, plus a byte to know
    /// there is more).
    pub text: usize,
    /// Bytes of HTML (converted to Markdown before it is cut).
    pub html: usize,
}

/// GET `url`, following at most `max_redirects` redirects, each checked by
/// `reach` before it is requested. A binary body is not read.
pub async fn get(
    client: &Client,
    reach: &Reach,
    mut url: Url,
    max_redirects: usize,
    caps: Caps,
) -> Result<Fetched, String> {
    let mut redirects = 0;
    let response = loop {
        reach.check(&url).map_err(|e| e.0)?;
        let response = client
            .get(url.clone())
            .send()
            .await
            .map_err(|e| request_error(&url, &e))?;
        let Some(next) = redirect_target(&url, &response)? else {
            break response;
        };
        if redirects == max_redirects {
            return Err(format!(
                "{url} redirects to {next}: stopped after {max_redirects} redirects \
                 ([tools.web_fetch] max_redirects)"
            ));
        }
        redirects += 1;
        url = next;
    };
    read(url, response, caps).await
}

/// Where a redirect response sends the request next; `None` for any other
/// response.
fn redirect_target(url: &Url, response: &Response) -> Result<Option<Url>, String> {
    let status = response.status();
    if !matches!(status.as_u16(), 301 | 302 | 303 | 307 | 308) {
        return Ok(None);
    }
    let Some(location) = response.headers().get(LOCATION) else {
        return Ok(None);
    };
    let location = String::from_utf8_lossy(location.as_bytes());
    url.join(&location)
        .map(Some)
        .map_err(|e| format!("{url} redirects to `{location}`, which is not a URL: {e}"))
}

/// The body of `response`, up to the cap of its kind.
async fn read(url: Url, mut response: Response, caps: Caps) -> Result<Fetched, String> {
    let content_type = response
        .headers()
        .get(CONTENT_TYPE)
        .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned());
    let length = response
        .headers()
        .get(CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok()?.parse().ok());
    let named = content_type.as_deref().and_then(|t| kind_of(&mime_of(t)));
    let cap = match named {
        // Not read: it is not shown.
        Some(Kind::Binary) => None,
        Some(Kind::Text) => Some(caps.text),
        Some(Kind::Html) | None => Some(caps.html.max(caps.text)),
    };
    let mut body = Vec::new();
    if let Some(cap) = cap {
        // One byte past the cap tells that there is more.
        while body.len() <= cap {
            let Some(chunk) = response
                .chunk()
                .await
                .map_err(|e| request_error(&url, &e))?
            else {
                break;
            };
            let room = cap + 1 - body.len();
            body.extend_from_slice(&chunk[..chunk.len().min(room)]);
        }
    }
    let complete = cap.is_some_and(|cap| body.len() <= cap);
    body.truncate(cap.unwrap_or(0));
    let kind = named.unwrap_or_else(|| sniff(&body));
    Ok(Fetched {
        url,
        status: response.status(),
        content_type,
        kind,
        body,
        length,
        complete,
    })
}

/// A Content-Type's type, lower case, without its parameters.
pub fn mime_of(content_type: &str) -> String {
    content_type
        .split(';')
        .next()
        .unwrap_or("")
        .trim()
        .to_ascii_lowercase()
}

/// What went wrong with the request to `url`: a refusal of the checks as
/// it is, anything else with its causes.
fn request_error(url: &Url, error: &reqwest::Error) -> String {
    let mut source = error.source();
    while let Some(cause) = source {
        if let Some(refused) = cause.downcast_ref::<Refused>() {
            return refused.0.clone();
        }
        source = cause.source();
    }
    if error.is_timeout() && error.is_connect() {
        return format!(
            "{url}: no connection within {} s",
            CONNECT_TIMEOUT.as_secs()
        );
    }
    if error.is_timeout() {
        return format!(
            "{url}: the server sent nothing for {} s",
            IDLE_TIMEOUT.as_secs()
        );
    }
    format!("{url}: {}", error_chain(error))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn content_types_are_sorted_into_html_text_and_binary() {
        for (mime, kind) in [
            ("text/html", Some(Kind::Html)),
            ("application/xhtml+xml", Some(Kind::Html)),
            ("text/plain", Some(Kind::Text)),
            ("text/markdown", Some(Kind::Text)),
            ("text/csv", Some(Kind::Text)),
            ("application/json", Some(Kind::Text)),
            ("application/ld+json", Some(Kind::Text)),
            ("application/atom+xml", Some(Kind::Text)),
            ("application/javascript", Some(Kind::Text)),
            ("application/toml", Some(Kind::Text)),
            ("image/png", Some(Kind::Binary)),
            ("application/pdf", Some(Kind::Binary)),
            ("application/zip", Some(Kind::Binary)),
            ("video/mp4", Some(Kind::Binary)),
            ("application/octet-stream", None),
            ("", None),
        ] {
            assert_eq!(kind_of(mime), kind, "{mime}");
        }
        assert_eq!(mime_of("Text/HTML; charset=UTF-8"), "text/html");
    }

    #[test]
    fn a_body_without_a_type_is_sniffed() {
        assert_eq!(sniff(b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR"), Kind::Binary);
        assert_eq!(sniff(b"\xef\xbb\xbf <!DOCTYPE html><p>x"), Kind::Html);
        assert_eq!(sniff(b"<html><body>x"), Kind::Html);
        assert_eq!(sniff(b"fn main() {}\n"), Kind::Text);
        assert_eq!(sniff(b""), Kind::Text);
    }
}
