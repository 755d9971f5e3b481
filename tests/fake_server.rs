//! Self-tests of the fake chat-completions server, over raw HTTP.
mod support;

#[test]
fn placeholder() {}
