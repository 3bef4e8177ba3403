//! Giving freed heap back to the kernel (issue 19). glibc's malloc keeps memory freed inside its arenas (one per
//! thread that allocates) and hands back only the free space at the very top of each heap. After a burst, e.g.
//! thousands of copied CSVs deleted when an admin turns copies off, or a big catalog replaced, an operator's RSS
//! stays at its peak although most of it is free. `malloc_trim(0)` releases the free pages of every arena
//! (`MADV_DONTNEED`); both operators call it every [`TRIM_EVERY`]. On an idle heap it costs microseconds, it never
//! moves live data, and on other C libraries it does nothing.

use std::time::Duration;

/// How often the heap is trimmed: rare enough to cost nothing, soon enough that a burst's memory is back before
/// anyone reads the pod's memory graph.
pub const TRIM_EVERY: Duration = Duration::from_secs(30);

/// Release the free pages of every malloc arena; returns whether any memory was released.
pub fn trim() -> bool {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    #[expect(
        unsafe_code,
        reason = "malloc_trim is FFI (Cargo.toml [workspace.lints]; the other unsafe calls are in code_pages.rs)"
    )]
    {
        // SAFETY: malloc_trim only walks glibc's own arenas under their locks; it takes no pointers of ours.
        unsafe { libc::malloc_trim(0) == 1 }
    }
    #[cfg(not(all(target_os = "linux", target_env = "gnu")))]
    {
        false
    }
}

/// Trim every [`TRIM_EVERY`] for as long as the runtime lives (spawned on the current tokio runtime).
pub fn spawn() {
    tokio::spawn(async {
        let mut every = tokio::time::interval(TRIM_EVERY);
        every.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            every.tick().await;
            let released = trim();
            tracing::trace!(released, "heap trimmed");
        }
    });
}
