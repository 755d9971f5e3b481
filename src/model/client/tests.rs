use super::*;

#[test]
fn only_a_plain_http_url_without_a_tls_proxy_skips_the_certificates() {
    assert!(is_plain_http("http://localhost:11434/v1", &[]));
    assert!(is_plain_http(
        "HTTP://127.0.0.1:8080",
        &["http://proxy:3128".into()]
    ));
    assert!(!is_plain_http("https://api.deepseek.com", &[]));
    assert!(!is_plain_http(
        "http://localhost:8080",
        &["https://proxy:443".into()]
    ));
    assert!(!is_plain_http("http", &[]));
}

#[test]
fn credentials_in_a_url_are_not_shown() {
    assert_eq!(
        shown_url("https://user:secret@llm.example/v1"),
        "https://***@llm.example/v1"
    );
    assert_eq!(
        shown_url("http://localhost:11434/v1"),
        "http://localhost:11434/v1"
    );
    assert_eq!(shown_url("not a url"), "not a url");
    assert_eq!(
        shown_url("https://llm.example/v1?key=sk-1#x"),
        "https://llm.example/v1?***"
    );
}

#[test]
fn error_message_shapes() {
    assert_eq!(
        error_message(r#"{"error":{"message":"Authentication Fails","type":"x"}}"#),
        "Authentication Fails"
    );
    assert_eq!(error_message(r#"{"message":"bad"}"#), "bad");
    assert_eq!(error_message(r#"{"error":"nope"}"#), "nope");
    assert_eq!(error_message("plain\ntext"), "plain text");
}
