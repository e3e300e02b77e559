use super::*;

#[test]
fn quota_is_recognised() {
    assert!(is_quota_exhausted(
        r#"{"error":{"type":"insufficient_quota"}}"#
    ));
    assert!(!is_quota_exhausted(r#"{"error":{"type":"rate_limit"}}"#));
}

#[test]
fn server_errors_expose_code_type_and_text() {
    let e = ServerError::parse(
        Some(400),
        r#"{"error":{"message":"Too Long","type":"invalid_request_error","code":"context_length_exceeded"}}"#,
    );
    assert!(e.code_is("context_length_exceeded") && e.kind_is("invalid_request_error"));
    assert!(e.says_any(&["too long"]) && e.status_in(&[400]) && !e.status_in(&[413]));
    let e = ServerError::parse(None, r#"{"code":500,"message":"x","type":"server_error"}"#);
    assert!(e.code_is("500") && e.status_in(&[]));
    let e = ServerError::parse(Some(404), "404 page NOT found");
    assert_eq!((e.code, e.kind), (None, None));
    assert_eq!(e.text, "404 page not found");
}

#[test]
fn error_messages_come_from_json_bodies_and_are_truncated() {
    let status = reqwest::StatusCode::BAD_REQUEST;
    assert_eq!(
        error_message(status, r#"{"error":{"message":"bad model","type":"x"}}"#),
        "bad model"
    );
    assert_eq!(error_message(status, r#"{"error":"plain"}"#), "plain");
    assert_eq!(error_message(status, r#"{"detail":"fastapi"}"#), "fastapi");
    assert_eq!(error_message(status, "  not json "), "not json");
    assert_eq!(error_message(status, ""), "Bad Request");
    let long = format!(r#"{{"error":{{"message":"{}"}}}}"#, "é".repeat(2000));
    let message = error_message(status, &long);
    assert_eq!(message.chars().count(), MAX_ERROR_CHARS + 1);
    assert!(message.ends_with('…'));
}

#[test]
fn loopback_hosts() {
    for host in ["127.0.0.1", "localhost", "LOCALHOST", "[::1]", "127.1.2.3"] {
        assert!(is_loopback(host), "{host}");
    }
    for host in ["api.openai.com", "10.0.0.1", "[::2]", "localhost.evil.com"] {
        assert!(!is_loopback(host), "{host}");
    }
}
