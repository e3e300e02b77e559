//! Stream decoding throughput per wire API: the same bytes (a long streamed
//! answer, one text delta per event, read in 16 KiB network reads) consumed
//! three ways:
//! - `raw`: the chunk stream read with no parsing (bytes counted);
//! - `framing`: SSE or NDJSON framing only;
//! - `events`: framing plus the wire API's parser into neutral events;
//! - `http_raw` and `http_events`: the same bytes served over a loopback
//!   socket and read through reqwest, counted only, or framed and parsed:
//!   what reading a real response costs, with and without decoding.
//!
//! cargo bench --bench wire -- --warm-up-time 1 --measurement-time 3

use cogni::provider::anthropic;
use cogni::provider::chat_completions::ChunkParser;
use cogni::provider::http::WireParser;
use cogni::provider::ollama::LineParser;
use cogni::provider::responses::EventParser;
use cogni::provider::sse::SseEvent;
use cogni::provider::{ndjson, sse, ResponseEvent};
use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use futures::{Stream, StreamExt};
use std::collections::VecDeque;
use std::convert::Infallible;
use std::hint::black_box;
use std::io::{Read, Write};
use std::net::TcpListener;
use std::time::Duration;

const DELTAS: usize = 20_000;
const READ: usize = 16 * 1024;

fn chat_body() -> String {
    let mut s = String::new();
    for i in 0..DELTAS {
        s.push_str(&format!(
            "data: {{\"id\":\"chatcmpl-1\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"gpt-4.1\",\"choices\":[{{\"index\":0,\"delta\":{{\"content\":\"word{i} \"}},\"finish_reason\":null}}]}}\n\n"
        ));
    }
    s.push_str("data: {\"id\":\"chatcmpl-1\",\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\n");
    s.push_str("data: {\"id\":\"chatcmpl-1\",\"choices\":[],\"usage\":{\"prompt_tokens\":10,\"completion_tokens\":20}}\n\n");
    s.push_str("data: [DONE]\n\n");
    s
}

fn responses_body() -> String {
    let mut s = String::from("event: response.created\ndata: {\"type\":\"response.created\",\"response\":{\"id\":\"resp_1\",\"status\":\"in_progress\"}}\n\n");
    for i in 0..DELTAS {
        s.push_str(&format!(
            "event: response.output_text.delta\ndata: {{\"type\":\"response.output_text.delta\",\"item_id\":\"msg_1\",\"output_index\":0,\"content_index\":0,\"delta\":\"word{i} \",\"sequence_number\":{i}}}\n\n"
        ));
    }
    s.push_str("event: response.completed\ndata: {\"type\":\"response.completed\",\"response\":{\"id\":\"resp_1\",\"status\":\"completed\",\"output\":[],\"usage\":{\"input_tokens\":10,\"output_tokens\":20,\"input_tokens_details\":{\"cached_tokens\":0}}}}\n\n");
    s
}

fn anthropic_body() -> String {
    let mut s = String::from("event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\",\"type\":\"message\",\"role\":\"assistant\",\"content\":[],\"model\":\"claude-sonnet-4-5\",\"usage\":{\"input_tokens\":10,\"output_tokens\":1}}}\n\n");
    s.push_str("event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n");
    for i in 0..DELTAS {
        s.push_str(&format!(
            "event: content_block_delta\ndata: {{\"type\":\"content_block_delta\",\"index\":0,\"delta\":{{\"type\":\"text_delta\",\"text\":\"word{i} \"}}}}\n\n"
        ));
    }
    s.push_str(
        "event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n",
    );
    s.push_str("event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\"},\"usage\":{\"output_tokens\":20}}\n\n");
    s.push_str("event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n");
    s
}

fn ollama_body() -> String {
    let mut s = String::new();
    for i in 0..DELTAS {
        s.push_str(&format!(
            "{{\"model\":\"qwen2.5-coder:7b\",\"created_at\":\"2025-01-01T00:00:00Z\",\"message\":{{\"role\":\"assistant\",\"content\":\"word{i} \"}},\"done\":false}}\n"
        ));
    }
    s.push_str("{\"model\":\"qwen2.5-coder:7b\",\"created_at\":\"2025-01-01T00:00:00Z\",\"message\":{\"role\":\"assistant\",\"content\":\"\"},\"done\":true,\"done_reason\":\"stop\",\"prompt_eval_count\":10,\"eval_count\":20}\n");
    s
}

fn reads(body: &str) -> impl Stream<Item = Result<Vec<u8>, Infallible>> {
    let chunks: Vec<Vec<u8>> = body.as_bytes().chunks(READ).map(<[u8]>::to_vec).collect();
    futures::stream::iter(chunks.into_iter().map(Ok))
}

async fn raw(body: &str) -> usize {
    reads(body)
        .fold(
            0,
            |n, chunk| async move { n + chunk.map_or(0, |c| c.len()) },
        )
        .await
}

async fn framing<S>(frames: S) -> usize
where
    S: Stream<Item = Result<SseEvent, sse::SseError<Infallible>>>,
{
    frames.fold(0, |n, _| async move { n + 1 }).await
}

/// Frames through `parser`; panics unless the stream completes, so the
/// figures are for streams that really parse.
async fn events<S, E>(frames: S, mut parser: Box<dyn WireParser>) -> usize
where
    S: Stream<Item = Result<SseEvent, sse::SseError<E>>>,
    E: std::fmt::Debug,
{
    let mut frames = std::pin::pin!(frames);
    let mut out = VecDeque::new();
    let mut count = 0;
    while let Some(frame) = frames.next().await {
        let frame = frame.expect("frame");
        let done = parser.on_frame(&frame, &mut out).expect("parses");
        count += out
            .drain(..)
            .filter(|e| !matches!(e, ResponseEvent::Retrying { .. }))
            .count();
        if done {
            return count;
        }
    }
    panic!("no terminal event");
}

/// A loopback HTTP/1.1 server answering every request with `body` in
/// `READ`-sized writes; its address.
fn serve(body: String) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let addr = listener.local_addr().expect("addr");
    std::thread::spawn(move || {
        for conn in listener.incoming() {
            let Ok(mut conn) = conn else { return };
            let body = body.clone();
            std::thread::spawn(move || {
                let mut request = Vec::new();
                let mut buf = [0u8; 4096];
                loop {
                    // One request at a time: headers end the request (GET).
                    while !request.windows(4).any(|w| w == b"\r\n\r\n") {
                        match conn.read(&mut buf) {
                            Ok(0) | Err(_) => return,
                            Ok(n) => request.extend_from_slice(&buf[..n]),
                        }
                    }
                    request.clear();
                    let head = format!(
                        "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncontent-length: {}\r\n\r\n",
                        body.len()
                    );
                    let sent = conn.write_all(head.as_bytes()).is_ok()
                        && body
                            .as_bytes()
                            .chunks(READ)
                            .all(|chunk| conn.write_all(chunk).is_ok());
                    if !sent {
                        return;
                    }
                }
            });
        }
    });
    format!("http://{addr}/")
}

async fn get(
    client: &reqwest::Client,
    url: &str,
) -> impl Stream<Item = reqwest::Result<impl AsRef<[u8]>>> {
    client
        .get(url)
        .send()
        .await
        .expect("response")
        .bytes_stream()
}

fn bench_wire(c: &mut Criterion) {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let client = reqwest::Client::new();
    let idle = Duration::from_secs(60);
    type Make = fn() -> Box<dyn WireParser>;
    let apis: [(&str, String, bool, Make); 4] = [
        ("chat", chat_body(), true, || {
            Box::new(ChunkParser::new(Vec::new()))
        }),
        ("responses", responses_body(), true, || {
            Box::new(EventParser::new())
        }),
        ("anthropic", anthropic_body(), true, || {
            Box::new(anthropic::EventParser::new(Vec::new(), None))
        }),
        ("ollama", ollama_body(), false, || {
            Box::new(LineParser::new(Vec::new()))
        }),
    ];
    for (name, body, is_sse, make) in apis {
        let mut group = c.benchmark_group(format!("wire/{name}"));
        group.throughput(Throughput::Bytes(body.len() as u64));
        group.bench_function("raw", |b| {
            b.iter(|| runtime.block_on(raw(black_box(&body))))
        });
        group.bench_function("framing", |b| {
            b.iter(|| {
                runtime.block_on(async {
                    if is_sse {
                        framing(sse::decode(reads(&body), idle)).await
                    } else {
                        framing(ndjson::decode(reads(&body), idle)).await
                    }
                })
            })
        });
        group.bench_function("events", |b| {
            b.iter(|| {
                runtime.block_on(async {
                    if is_sse {
                        events(sse::decode(reads(&body), idle), make()).await
                    } else {
                        events(ndjson::decode(reads(&body), idle), make()).await
                    }
                })
            })
        });
        let url = serve(body.clone());
        group.bench_function("http_raw", |b| {
            b.iter(|| {
                runtime.block_on(async {
                    get(&client, &url)
                        .await
                        .fold(0, |n, c| async move { n + c.expect("read").as_ref().len() })
                        .await
                })
            })
        });
        group.bench_function("http_events", |b| {
            b.iter(|| {
                runtime.block_on(async {
                    let bytes = get(&client, &url).await;
                    if is_sse {
                        events(sse::decode(bytes, idle), make()).await
                    } else {
                        events(ndjson::decode(bytes, idle), make()).await
                    }
                })
            })
        });
        group.finish();
    }
}

criterion_group!(benches, bench_wire);
criterion_main!(benches);
