//! Train arithmetic and PHA-D's state machine, shared by the simulator (`mobipath-sim`, `hst`)
//! and the router (`mobipath-proxy`, `phad`), so both compute the same positions, fields, ranges
//! and MP_PRIO decisions from one implementation (see `README.md`).
pub mod fit;
pub mod fixes;
pub mod input;
pub mod nmea;
pub mod phad;
pub mod stretches;
pub mod track;
