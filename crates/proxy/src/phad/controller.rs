//! PHA-D's decision logic: the state machine the simulator runs too, from the crate both use
//! (`mobipath_hst::phad`, crates/hst), so the router's MP_PRIO decisions are the simulator's by
//! construction. What the router adds lives beside it: the subflows' measurements (`Obs`: RTT,
//! RTO and send-queue drain from the kernel, the server proxy's figures, `peer.rs`), the table
//! reader (`table.rs`) and the loop that applies each `Decision` through the fail-safe flags
//! (`daemon.rs`). `tests/phad_vs_sim.rs` still rides the router's and the simulator's wrappers
//! (table readers, observation mapping, policy mapping) side by side.
pub use mobipath_hst::phad::*;
