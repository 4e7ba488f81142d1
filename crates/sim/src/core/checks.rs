//! Self-checks of the simulator's incremental caches, for tests.
//!
//! Some state is kept incrementally for speed (the MPTCP sender's per-subflow scheduler
//! snapshots are refreshed only for the subflows that changed). With checks on, every use of
//! such a cache first compares it with a from-scratch computation and panics on a difference,
//! so a missed invalidation shows up as a failing test instead of silently different results.
//! The golden and behaviour tests turn them on; they cost one extra computation per use.
use std::sync::atomic::{AtomicBool, Ordering};

static CACHE_CHECKS: AtomicBool = AtomicBool::new(false);

/// Turns the cache self-checks on or off for objects created from now on (process-wide).
pub fn set_cache_checks(on: bool) {
    CACHE_CHECKS.store(on, Ordering::Relaxed);
}

/// Whether objects created now should check their caches.
pub fn cache_checks() -> bool {
    CACHE_CHECKS.load(Ordering::Relaxed)
}
