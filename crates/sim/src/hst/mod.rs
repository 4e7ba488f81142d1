//! High-speed-train pieces of P0 that sit above the radio model: handover tables and the
//! handover-aware scheduling wrappers.
pub mod gps;
pub mod harq;
pub mod pha;
pub mod phad;
pub mod report;
pub mod scenario;
pub mod table;
pub mod wrappers;
