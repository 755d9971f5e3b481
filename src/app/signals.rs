//! The signals that end a run, and the reaping of orphans while it goes on.

use tokio::signal::unix::{signal, Signal, SignalKind};

use crate::process;

/// The signals that cancel a run: Ctrl-C, `kill`, the terminal going away, and Ctrl-\.
pub const CANCELLING: [i32; 4] = [libc::SIGINT, libc::SIGTERM, libc::SIGHUP, libc::SIGQUIT];

/// The signals that end `hx chat` whatever it is doing (Ctrl-C only cancels a turn there).
pub const ENDING: [i32; 3] = [libc::SIGTERM, libc::SIGHUP, libc::SIGQUIT];

/// Watched signals. Once watched, they no longer take their default action; the handlers
/// stay installed until this is dropped, and even after (tokio keeps them), so a second
/// signal during the cleanup that follows cannot cut it short.
pub struct Signals(Vec<(i32, Signal)>);

impl Signals {
    /// Watches `signals` (must be called on the runtime).
    pub fn of(signals: &[i32]) -> std::io::Result<Signals> {
        signals
            .iter()
            .map(|&n| Ok((n, signal(SignalKind::from_raw(n))?)))
            .collect::<std::io::Result<_>>()
            .map(Signals)
    }

    /// Watches the [`CANCELLING`] signals.
    pub fn cancelling() -> std::io::Result<Signals> {
        Self::of(&CANCELLING)
    }

    /// The number of the first watched signal to arrive.
    pub async fn recv(&mut self) -> i32 {
        let waits = self.0.iter_mut().map(|(n, s)| {
            Box::pin(async move {
                s.recv().await;
                *n
            })
        });
        futures_util::future::select_all(waits).await.0
    }
}

/// Reaps orphans re-parented to hx as they end, for as long as it is polled (spawn it for
/// the whole run and abort it at the end).
pub async fn reap_orphans() {
    let Ok(mut sigchld) = signal(SignalKind::child()) else {
        return;
    };
    while sigchld.recv().await.is_some() {
        process::cleanup::reap_orphans();
    }
}
