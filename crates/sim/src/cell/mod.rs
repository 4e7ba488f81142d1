//! An LTE cell (one eNB, its UEs, FDD or TDD, MAC schedulers) as a network element, and P4's
//! BSR-based uplink congestion control at the eNB (README.md in this folder: the model, its
//! sources and what it leaves out).
//!
//! - [`frame`]: TTIs, TDD configurations 0–6, special subframes, grant timing (TS 36.211/213);
//! - [`phy`]: bandwidth → RBs, CQI → bytes per RB (TS 36.101, TS 36.213 Table 7.2.3-1);
//! - [`bsr`]: the BSR index table (TS 36.321 Table 6.1.3.1-1);
//! - [`buffer`]: per-UE drop-tail buffers with segmentation, GBR / ACK / data lanes;
//! - [`sched`]: MAC schedulers (rr, pf, bsr-proportional), a registry like the MPTCP schedulers;
//! - [`congestion`]: uplink congestion policies (none, bsr-drop, red-large, ack-prio) and P4's
//!   parameter formulas;
//! - [`config`]: the `[[cells]]` scenario table, its checks and its resolution;
//! - [`element`]: the cell element and its TTI loop.
pub mod bsr;
pub mod buffer;
pub mod config;
pub mod congestion;
pub mod element;
pub mod frame;
pub mod phy;
pub mod sched;

pub use config::{CellConfig, CellSpec};
