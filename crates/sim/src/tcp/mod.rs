//! TCP endpoints as state machines driven by packets and timers with an explicit `now`.
pub mod cc;
