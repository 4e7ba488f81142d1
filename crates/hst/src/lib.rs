//! Train arithmetic shared by the simulator (`mobipath-sim`, `hst`) and the router
//! (`mobipath-proxy`, `phad`), so both compute the same positions, fields and ranges from one
//! implementation (see `README.md`).
pub mod fit;
pub mod nmea;
pub mod phad;
pub mod stretches;
pub mod track;
