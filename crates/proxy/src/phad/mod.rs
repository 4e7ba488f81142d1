//! PHA-D on the live router (P0 §3.3), inside the router proxy process so that it owns the
//! MPTCP connections it steers: see README.md (`[pha_d]`) and each module.
//!
//! | module | owns |
//! |---|---|
//! | `controller` | the decision logic: `mobipath_hst::phad`, the simulator's own (queue-aware lead; B=0 re-sends) |
//! | `table` | handover table v1/v2 reader (stretch sums: `mobipath_hst::stretches`) |
//! | `twocol` | the walk of a two-column CSV file (header, comments, error form) both readers share |
//! | `track` | lat,lon track reader (the projection: `mobipath_hst::track`, shared with the simulator) |
//! | `nmea` | NMEA 0183 sentences with checksums (field rules: `mobipath_hst::nmea`) |
//! | `gps` | GPS sources: gpsd, NMEA serial/file/UDP, replay |
//! | `config` | the `[pha_d]` section |
//! | `daemon` | the loop: GPS → controller → fail-safe flags, kernel observations |
//! | `peer` | the server proxy's queues and RTTs from its metrics endpoint (downloads) |
pub mod config;
pub mod controller;
pub mod daemon;
pub mod gps;
pub mod nmea;
pub mod peer;
pub mod table;
pub mod track;
pub mod twocol;
