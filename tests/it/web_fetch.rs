//! `web_fetch` through the real binary: `cogni run` with the scripted
//! model calling it against a loopback HTTP server started here (nothing
//! reaches past 127.0.0.1). HTML as Markdown with its title and final URL,
//! the size cap, the redirect limit, the timeout, and every refusal: the
//! network off, loopback and private addresses without the allowed list,
//! a redirect to one, credentials in the URL; no cookie ever sent back.

use crate::cli::{stderr_of, stdout_of, Env};
use std::io::{BufRead, BufReader, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// A loopback HTTP/1.1 server: one thread per connection, each request
/// answered by [`answer`] and its head recorded.
struct Site {
    port: u16,
    heads: Arc<Mutex<Vec<String>>>,
}

impl Site {
    fn start() -> Site {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let heads = Arc::new(Mutex::new(Vec::new()));
        let recorded = heads.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let recorded = recorded.clone();
                std::thread::spawn(move || serve(stream, port, &recorded));
            }
        });
        Site { port, heads }
    }

    fn url(&self, path: &str) -> String {
        format!("http://127.0.0.1:{}{path}", self.port)
    }

    /// The heads of the requests made so far, each `GET /path ...` with
    /// its header lines.
    fn heads(&self) -> Vec<String> {
        self.heads.lock().unwrap().clone()
    }

    fn requested(&self, path: &str) -> bool {
        let line = format!("GET {path} ");
        self.heads().iter().any(|h| h.starts_with(&line))
    }
}

fn serve(stream: TcpStream, port: u16, heads: &Mutex<Vec<String>>) {
    stream.set_nodelay(true).unwrap();
    let mut reader = BufReader::new(stream.try_clone().unwrap());
    let mut head = String::new();
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).unwrap_or(0) == 0 {
            return;
        }
        if line == "\r\n" {
            break;
        }
        head.push_str(&line);
    }
    heads.lock().unwrap().push(head.clone());
    let path = head.split_whitespace().nth(1).unwrap_or("/").to_string();
    if path == "/hang" {
        // Never answer; wait until the client gives up.
        let _ = reader.read_line(&mut String::new());
        return;
    }
    let (status, headers, body) = answer(&path, port);
    let mut out = stream;
    let _ = write!(
        out,
        "HTTP/1.1 {status}\r\nContent-Length: {}\r\nConnection: close\r\n{headers}\r\n",
        body.len()
    );
    let _ = out.write_all(&body);
}

/// The site's pages: (status line, header lines, body).
fn answer(path: &str, port: u16) -> (String, String, Vec<u8>) {
    let ok = |content_type: &str, body: Vec<u8>| {
        (
            "200 OK".to_string(),
            format!("Content-Type: {content_type}\r\n"),
            body,
        )
    };
    let redirect = |to: String, extra: &str| {
        (
            "302 Found".to_string(),
            format!("Location: {to}\r\n{extra}"),
            Vec::new(),
        )
    };
    if let Some(n) = path.strip_prefix("/loop/") {
        let next: u32 = n.parse::<u32>().unwrap() + 1;
        return redirect(format!("/loop/{next}"), "");
    }
    match path {
        "/page" => ok(
            "text/html; charset=utf-8",
            b"<!doctype html><html><head><title>Release notes</title>\
              <script>document.write('tracking')</script></head><body>\
              <nav><a href=\"/\">Home</a></nav><h1>Version 2</h1>\
              <p>It is <strong>faster</strong>; see <a href=\"/docs/guide\">the guide</a>.</p>\
              </body></html>"
                .to_vec(),
        ),
        "/moved" => redirect(
            "/page".to_string(),
            "Set-Cookie: session=s3cret; Path=/\r\n",
        ),
        "/big" => ok("text/plain", "0123456789\n".repeat(20_000).into_bytes()),
        "/data.json" => ok(
            "application/json",
            br#"{"name": "cogni", "ok": true}"#.to_vec(),
        ),
        "/logo.png" => ok("image/png", b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR".to_vec()),
        "/missing" => (
            "404 Not Found".to_string(),
            "Content-Type: text/plain\r\n".to_string(),
            b"no such page".to_vec(),
        ),
        "/to-metadata" => redirect("http://169.254.169.254/latest/meta-data/".into(), ""),
        "/to-localhost" => redirect(format!("http://localhost:{port}/page"), ""),
        _ => ok("text/plain", b"other".to_vec()),
    }
}

/// The user's config: web_fetch's settings (a `[tools.web_fetch]` body)
/// and, with `network`, the sandbox's network on.
fn env_with(web_fetch: &str, network: bool) -> Env {
    let env = Env::new();
    let network = if network {
        "[sandbox_workspace_write]\nnetwork_access = true\n"
    } else {
        ""
    };
    std::fs::write(
        env.dir.path().join("home/config.toml"),
        format!("{network}[tools.web_fetch]\n{web_fetch}\n"),
    )
    .unwrap();
    env
}

/// `cogni run --json` with a model that fetches each of `urls` in turn
/// and then answers; the outputs of the calls, in order, each with
/// whether it failed.
fn fetch(env: &Env, urls: &[String], args: &[&str]) -> Vec<(String, bool)> {
    let mut turns: Vec<serde_json::Value> = urls
        .iter()
        .map(|url| {
            serde_json::json!({
                "tool_calls": [{"name": "web_fetch", "arguments": {"url": url}}]
            })
        })
        .collect();
    turns.push(serde_json::json!({"text": "done"}));
    let script = env.script_file("script.toml", serde_json::Value::Array(turns));
    let out = env
        .cmd()
        .args(["run", "--json", "--script"])
        .arg(script)
        .args(args)
        .arg("fetch the pages")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    let outputs: Vec<(String, bool)> = stdout_of(&out)
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .filter(|e| e["type"] == "item.completed" && e["item"]["type"] == "tool_call")
        .map(|e| {
            let item = &e["item"];
            assert_eq!(item["name"], "web_fetch", "{item}");
            (
                item["output"].as_str().unwrap().to_string(),
                item["status"] == "failed",
            )
        })
        .collect();
    assert_eq!(outputs.len(), urls.len(), "{}", stdout_of(&out));
    outputs
}

const LOOPBACK_ALLOWED: &str = "allowed_domains = [\"127.0.0.1\"]";

#[test]
fn a_page_is_markdown_with_its_title_and_final_url_and_no_cookie_goes_back() {
    let site = Site::start();
    let env = env_with(LOOPBACK_ALLOWED, false);
    let outputs = fetch(
        &env,
        &[
            site.url("/moved"),
            site.url("/moved"),
            site.url("/data.json"),
        ],
        &[],
    );
    let (page, failed) = &outputs[0];
    assert!(!failed, "{page}");
    let head = format!(
        "URL: {}\nTitle: Release notes\nContent-Type: text/html; charset=utf-8\n\n",
        site.url("/page")
    );
    assert!(page.starts_with(&head), "{page}");
    assert!(page.contains("# Version 2"), "{page}");
    assert!(
        page.contains(&format!(
            "It is **faster**; see [the guide]({}).",
            site.url("/docs/guide")
        )),
        "{page}"
    );
    assert!(!page.contains("tracking"), "{page}");
    assert_eq!(outputs[1], outputs[0]);
    let (json, _) = &outputs[2];
    assert!(
        json.ends_with("\n\n{\"name\": \"cogni\", \"ok\": true}"),
        "{json}"
    );
    let heads = site.heads();
    assert_eq!(heads.len(), 5, "{heads:?}");
    for head in &heads {
        let lower = head.to_ascii_lowercase();
        for header in [
            "cookie:",
            "authorization:",
            "proxy-authorization:",
            "referer:",
        ] {
            assert!(!lower.contains(header), "{header} sent: {head}");
        }
    }
}

#[test]
fn the_text_is_cut_to_max_bytes_and_binary_content_is_refused() {
    let site = Site::start();
    let env = env_with(&format!("{LOOPBACK_ALLOWED}\nmax_bytes = 1000"), false);
    let outputs = fetch(
        &env,
        &[
            site.url("/big"),
            site.url("/logo.png"),
            site.url("/missing"),
        ],
        &[],
    );
    let (big, failed) = &outputs[0];
    assert!(!failed);
    let body = big.split_once("\n\n").unwrap().1;
    let (text, note) = body.split_once("\n\n[... cut").unwrap();
    assert_eq!(text, &"0123456789\n".repeat(100)[..1000]);
    assert_eq!(
        note,
        ": the first 1000 bytes are shown, of 220000 bytes ([tools.web_fetch] max_bytes)]"
    );
    let (png, failed) = &outputs[1];
    assert!(failed);
    assert!(
        png.contains("is binary content (image/png, 16 bytes): not shown"),
        "{png}"
    );
    let (missing, failed) = &outputs[2];
    assert!(failed, "a 404 is a failed call");
    assert!(missing.contains("Status: 404 Not Found\n"), "{missing}");
    assert!(missing.ends_with("no such page"), "{missing}");
}

#[test]
fn redirects_stop_at_the_limit_and_a_silent_server_times_out() {
    let site = Site::start();
    let env = env_with(
        &format!("{LOOPBACK_ALLOWED}\nmax_redirects = 2\ntimeout_secs = 1"),
        false,
    );
    let start = Instant::now();
    let outputs = fetch(&env, &[site.url("/loop/0"), site.url("/hang")], &[]);
    let (looped, failed) = &outputs[0];
    assert!(failed);
    assert!(
        looped.ends_with(&format!(
            "{} redirects to {}: stopped after 2 redirects ([tools.web_fetch] max_redirects)",
            site.url("/loop/2"),
            site.url("/loop/3")
        )),
        "{looped}"
    );
    assert!(!site.requested("/loop/3"));
    let (hung, failed) = &outputs[1];
    assert!(failed);
    assert_eq!(
        hung,
        "web_fetch: timed out after 1 s ([tools.web_fetch] timeout_secs)"
    );
    assert!(
        start.elapsed() < Duration::from_secs(20),
        "{:?}",
        start.elapsed()
    );
}

#[test]
fn with_the_network_off_only_allowed_hosts_are_fetched() {
    let site = Site::start();
    let env = env_with("", false);
    let outputs = fetch(&env, &[site.url("/page")], &[]);
    assert_eq!(
        outputs[0].0,
        "web_fetch: the network is off in this session (sandbox network_access = false) and \
         127.0.0.1 is not on [tools.web_fetch] allowed_domains in cogni.toml; the user can add \
         it there, or turn the network on"
    );
    assert!(site.heads().is_empty());
}

#[test]
fn loopback_and_private_hosts_are_refused_unless_allowed() {
    let site = Site::start();
    // The network on, nothing allowed.
    let env = env_with("", true);
    let urls = [
        site.url("/page"),
        format!("http://localhost:{}/page", site.port),
        format!("http://[::1]:{}/page", site.port),
        format!("http://2130706433:{}/page", site.port),
        "http://169.254.169.254/latest/meta-data/".to_string(),
        "http://10.0.0.1/".to_string(),
    ];
    let outputs = fetch(&env, &urls, &[]);
    for ((output, failed), url) in outputs.iter().zip(&urls) {
        assert!(failed, "{url}: {output}");
        assert!(
            output.contains(
                "web_fetch does not reach loopback, private or link-local addresses unless \
                 [tools.web_fetch] allowed_domains in cogni.toml names the host"
            ),
            "{url}: {output}"
        );
    }
    assert!(
        outputs[1]
            .0
            .starts_with("web_fetch: localhost resolves to "),
        "{}",
        outputs[1].0
    );
    assert!(
        outputs[4]
            .0
            .starts_with("web_fetch: 169.254.169.254 is a link-local address"),
        "{}",
        outputs[4].0
    );
    assert!(site.heads().is_empty(), "{:?}", site.heads());
    // Unsandboxed, the network is on too: the addresses are refused all the same.
    let outputs = fetch(&env, &urls[..1], &["--sandbox", "danger-full-access"]);
    assert!(outputs[0].0.contains("127.0.0.1 is a loopback address"));
    assert!(site.heads().is_empty(), "{:?}", site.heads());
}

#[test]
fn a_redirect_to_a_private_address_or_a_name_of_one_is_refused() {
    let site = Site::start();
    let env = env_with(LOOPBACK_ALLOWED, true);
    let outputs = fetch(
        &env,
        &[site.url("/to-metadata"), site.url("/to-localhost")],
        &[],
    );
    assert_eq!(
        outputs[0],
        (
            "web_fetch: 169.254.169.254 is a link-local address (where cloud metadata services \
             answer); web_fetch does not reach loopback, private or link-local addresses unless \
             [tools.web_fetch] allowed_domains in cogni.toml names the host"
                .to_string(),
            true
        )
    );
    assert!(
        outputs[1]
            .0
            .starts_with("web_fetch: localhost resolves to "),
        "{}",
        outputs[1].0
    );
    // The allowed host was asked; the page it pointed to never was.
    assert!(site.requested("/to-localhost"));
    assert!(!site.requested("/page"), "{:?}", site.heads());
}

#[test]
fn credentials_in_the_url_are_refused_before_anything_is_sent() {
    let site = Site::start();
    let env = env_with(LOOPBACK_ALLOWED, true);
    let url = format!("http://admin:hunter2@127.0.0.1:{}/page", site.port);
    let outputs = fetch(&env, &[url], &[]);
    assert_eq!(
        outputs[0],
        (
            "web_fetch: the URL carries credentials (user:password@); web_fetch never sends \
             credentials, so remove them"
                .to_string(),
            true
        )
    );
    assert!(site.heads().is_empty());
}

#[test]
fn under_untrusted_a_fetch_is_asked_showing_its_url() {
    let site = Site::start();
    let env = env_with(LOOPBACK_ALLOWED, false);
    let url = site.url("/page");
    let turns = serde_json::json!([
        {"tool_calls": [{"name": "web_fetch", "arguments": {"url": url}}]},
        {"text": "done"}
    ]);
    let script = env.script_file("script.toml", turns);
    let out = env
        .cmd()
        .args(["run", "--json", "--approval", "untrusted", "--script"])
        .arg(script)
        .arg("fetch")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    let approvals: Vec<serde_json::Value> = stdout_of(&out)
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .filter(|e| e["type"] == "approval")
        .collect();
    let statuses: Vec<&str> = approvals
        .iter()
        .map(|e| e["status"].as_str().unwrap())
        .collect();
    assert_eq!(statuses, ["asked", "denied"], "{approvals:?}");
    for event in &approvals {
        assert_eq!(event["tool"], "web_fetch");
        assert_eq!(event["summary"], format!("GET {url}"));
    }
    assert!(site.heads().is_empty(), "nobody said yes: nothing was sent");
}
