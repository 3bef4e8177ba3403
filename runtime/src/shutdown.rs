//! Stopping on SIGTERM (Kubernetes stopping the pod) and SIGINT.

/// SIGTERM (Kubernetes stopping the pod) and SIGINT, listened for from creation on: a signal that arrives while
/// the operator is still starting (between waiting for the Lease and serving) is kept, not lost.
pub struct ShutdownSignal {
    #[cfg(unix)]
    listeners: Option<(tokio::signal::unix::Signal, tokio::signal::unix::Signal)>,
}

impl ShutdownSignal {
    /// Start listening (inside the tokio runtime).
    pub fn listen() -> Self {
        #[cfg(unix)]
        {
            use tokio::signal::unix::{SignalKind, signal};
            let listeners = match (
                signal(SignalKind::terminate()),
                signal(SignalKind::interrupt()),
            ) {
                (Ok(term), Ok(int)) => Some((term, int)),
                (Err(error), _) | (_, Err(error)) => {
                    tracing::warn!(
                        error = &error as &dyn std::error::Error,
                        "cannot listen for SIGTERM/SIGINT; Ctrl-C only"
                    );
                    None
                }
            };
            Self { listeners }
        }
        #[cfg(not(unix))]
        {
            Self {}
        }
    }

    /// Wait for the first SIGTERM or SIGINT since [`ShutdownSignal::listen`].
    pub async fn recv(&mut self) {
        #[cfg(unix)]
        if let Some((term, int)) = self.listeners.as_mut() {
            tokio::select! {
                _ = term.recv() => {},
                _ = int.recv() => {},
            }
            return;
        }
        let _ = tokio::signal::ctrl_c().await;
    }
}
