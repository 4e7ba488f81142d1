//! Multipath TCP: connection level (RFC 8684 semantics) over TCP subflows, and schedulers.
pub mod p1_examples;
pub mod receiver;
pub mod sched;
pub mod sender;
