//! A server that redirects gets no second request: the request carries the API key, and hx
//! never follows a redirect with it.

use crate::support::{FakeServer, Hx, Reply};

#[test]
fn a_redirect_is_an_error_naming_where_it_points_and_is_not_followed() {
    let elsewhere = FakeServer::start(vec![Reply::text("stolen")]);
    let target = format!("{}/chat/completions", elsewhere.url());
    let server = FakeServer::start(vec![Reply::status(307, "").with_header("location", &target)]);
    let mut hx = Hx::new(&server);
    hx.args(["agent", "hello"]);
    let run = hx.run();
    run.assert_code(1);
    assert!(elsewhere.requests().is_empty(), "the redirect was followed");
    assert_eq!(server.requests().len(), 1, "a redirect is not retried");
    assert!(
        run.stderr.contains(&format!(
            "API error 307: the server redirects to {target}; hx does not follow redirects"
        )),
        "{}",
        run.stderr
    );
}

#[test]
fn an_mcp_server_over_http_that_redirects_is_not_followed_with_its_headers() {
    let elsewhere = FakeServer::start(vec![Reply::text("stolen")]);
    let server = FakeServer::start(vec![Reply::status(307, "")
        .with_header("location", &format!("{}/chat/completions", elsewhere.url()))]);
    let mut hx = Hx::new(&server);
    hx.write_user_config(
        "config.toml",
        &format!(
            // The fake server answers this path only.
            "[mcp_servers.remote]\nurl = \"{}/chat/completions\"\nhttp_headers = {{ X-Api-Key = \"secret\" }}\n",
            server.url()
        ),
    );
    let run = hx.run_args(&["mcp", "list"]);
    assert!(
        elsewhere.requests().is_empty(),
        "the redirect was followed\n{}",
        run.dump()
    );
    assert!(
        !server.requests().is_empty(),
        "the server was never asked\n{}",
        run.dump()
    );
    assert!(run.stdout.contains("remote: failed"), "{}", run.dump());
}
