//! Item 7 of issue 19: with `network = false`, no IPv4 or IPv6 traffic leaves a command. Landlock
//! refuses only TCP `connect` and `bind`; TCP Fast Open (`sendto(MSG_FASTOPEN)`), MPTCP
//! (protocol 262), UDP and IPv6 went past it, and the seccomp filter refuses them all. The
//! listeners are the test's own, on loopback; the real binary, the fake server, the real
//! kernel.

use std::io::{ErrorKind, Read};
use std::net::{TcpListener, UdpSocket};

use crate::containment::{direct, turn};
use crate::support::Hx;

/// The attacks of `docs/containment/repro/07-network.sh`, at the test's listeners: argv is
/// the IPv4 TCP port, the UDP port, and the IPv6 TCP port (0: no IPv6 here).
const ATTACK: &str = r#"python3 - "$@" <<'PY'
import socket, sys, threading
tcp, udp, tcp6 = (int(a) for a in sys.argv[1:4])
def attempt(what, f):
    try: f(); print("SENT", what)
    except OSError as e: print("refused", what, e.strerror)
def plain():
    s = socket.socket(); s.settimeout(2); s.connect(("127.0.0.1", tcp)); s.sendall(b"plain")
def tfo():
    s = socket.socket(); s.settimeout(2); s.sendto(b"fastopen", socket.MSG_FASTOPEN, ("127.0.0.1", tcp))
def mptcp():
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM, 262); s.settimeout(2); s.connect(("127.0.0.1", tcp)); s.sendall(b"mptcp")
def dgram():
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.sendto(b"udp", ("127.0.0.1", udp))
def v6():
    s = socket.socket(socket.AF_INET6); s.settimeout(2); s.connect(("::1", tcp6)); s.sendall(b"ipv6")
tries = [("connect", plain), ("fastopen", tfo), ("mptcp", mptcp), ("udp", dgram)]
if tcp6: tries.append(("ipv6", v6))
for w, f in tries: attempt(w, f)
def inside():
    srv = socket.socket(); srv.bind(("127.0.0.1", 0)); srv.listen(1)
    threading.Thread(target=lambda: srv.accept()[0].sendall(b"ok"), daemon=True).start()
    c = socket.socket(); c.settimeout(2); c.connect(srv.getsockname()); assert c.recv(2) == b"ok"
attempt("inside-loopback", inside)
PY"#;

/// The test's listeners: what reached them is read once the command is done (a connection
/// the kernel accepted waits in the backlog, a datagram in the buffer).
pub(crate) struct Listeners {
    tcp: TcpListener,
    tcp6: Option<TcpListener>,
    udp: UdpSocket,
}

impl Listeners {
    pub(crate) fn start() -> Listeners {
        let tcp = TcpListener::bind("127.0.0.1:0").expect("tcp");
        let tcp6 = TcpListener::bind("[::1]:0").ok();
        let udp = UdpSocket::bind("127.0.0.1:0").expect("udp");
        tcp.set_nonblocking(true).expect("nonblocking");
        udp.set_nonblocking(true).expect("nonblocking");
        if let Some(l) = &tcp6 {
            l.set_nonblocking(true).expect("nonblocking");
        }
        Listeners { tcp, tcp6, udp }
    }

    pub(crate) fn command(&self) -> String {
        let port = |l: &TcpListener| l.local_addr().expect("addr").port();
        format!(
            "set -- {} {} {}\n{ATTACK}",
            port(&self.tcp),
            self.udp.local_addr().expect("addr").port(),
            self.tcp6.as_ref().map_or(0, port)
        )
    }

    pub(crate) fn ipv6(&self) -> bool {
        self.tcp6.is_some()
    }

    /// What arrived: one entry per connection (its data) or datagram.
    pub(crate) fn received(&self) -> Vec<String> {
        let mut got = Vec::new();
        for l in std::iter::once(&self.tcp).chain(self.tcp6.as_ref()) {
            loop {
                match l.accept() {
                    Ok((mut c, _)) => {
                        c.set_nonblocking(false).expect("blocking");
                        c.set_read_timeout(Some(std::time::Duration::from_millis(500)))
                            .expect("timeout");
                        let mut data = Vec::new();
                        let _ = c.read_to_end(&mut data);
                        got.push(format!("tcp {}", String::from_utf8_lossy(&data)));
                    }
                    Err(e) if e.kind() == ErrorKind::WouldBlock => break,
                    Err(e) => panic!("accept: {e}"),
                }
            }
        }
        let mut buf = [0u8; 64];
        while let Ok(n) = self.udp.recv(&mut buf) {
            got.push(format!("udp {}", String::from_utf8_lossy(&buf[..n])));
        }
        got
    }
}

/// Runs the attacks through hx with `config`; returns what the command printed and what the
/// listeners received.
fn attack(config: &str) -> (String, Vec<String>, bool) {
    let listeners = Listeners::start();
    let mut hx = Hx::new_offline();
    hx.write_user_config("config.toml", config);
    let (out, _) = turn(&mut hx, &[&listeners.command()], direct);
    (
        out[0].clone(),
        listeners.received(),
        listeners.tcp6.is_some(),
    )
}

#[test]
fn network_false_lets_no_ip_traffic_out() {
    let (out, got, v6) = attack("[sandbox]\nnetwork = false\n");
    assert_nothing_left(&out, &got, v6);
}

/// What the command printed (`out`) and what the listeners got (`got`) show no IP traffic.
/// In the run's pod (a network namespace with only loopback) the sockets are made, and what
/// is sent goes nowhere: UDP is "sent" into the pod's own loopback and the command's own
/// loopback server works. Without a pod the seccomp filter refuses every IP socket when it is
/// made (`Permission denied`), the command's own loopback server too. Either way nothing
/// reaches the listeners outside, and no connection is made.
pub(crate) fn assert_nothing_left(out: &str, got: &[String], v6: bool) {
    assert_eq!(got, Vec::<String>::new(), "{out}");
    let pod = out.contains("SENT inside-loopback");
    let mut refused = vec!["connect", "fastopen", "mptcp"];
    if v6 {
        refused.push("ipv6");
    } else {
        eprintln!("no IPv6 loopback here; IPv6 not tried");
    }
    if !pod {
        refused.extend(["udp", "inside-loopback"]);
    }
    for what in refused {
        let line = out
            .lines()
            .find(|l| l.starts_with(&format!("refused {what} ")))
            .unwrap_or_else(|| panic!("{what} was not refused: {out}"));
        if !pod {
            assert_eq!(line, format!("refused {what} Permission denied"), "{out}");
        }
    }
    for what in ["connect", "fastopen", "mptcp", "ipv6"] {
        assert!(!out.contains(&format!("SENT {what}\n")), "{what}: {out}");
    }
}

/// The same attacks with the network allowed arrive: the listeners and the script work, so
/// the test above can fail.
#[test]
fn with_the_network_allowed_the_same_attacks_arrive() {
    let (out, got, _) = attack("[sandbox]\nnetwork = true\n");
    for what in ["connect", "udp", "inside-loopback"] {
        assert!(out.contains(&format!("SENT {what}\n")), "{what}: {out}");
    }
    assert!(got.contains(&"tcp plain".to_string()), "{got:?}\n{out}");
    assert!(got.contains(&"udp udp".to_string()), "{got:?}\n{out}");
}

/// io_uring, whose ring would run `socket` and `connect` where no syscall rule sees them, is
/// not there for a command (as on a kernel without it), with the network allowed too.
#[test]
fn a_command_has_no_io_uring() {
    let script = "python3 -c \"import ctypes, os\nlibc = ctypes.CDLL(None, use_errno=True)\n\
                  p = ctypes.create_string_buffer(120)\nr = libc.syscall(425, 4, p)\n\
                  print(r, os.strerror(ctypes.get_errno()))\"";
    let mut hx = Hx::new_offline();
    let (out, _) = turn(&mut hx, &[script], direct);
    assert_eq!(out[0], "-1 Function not implemented\n");
    let mut hx = Hx::new_offline();
    hx.write_user_config("config.toml", "sandbox = \"off\"\n");
    let (out, _) = turn(&mut hx, &[script], direct);
    assert_ne!(out[0], "-1 Function not implemented\n", "{}", out[0]);
}
