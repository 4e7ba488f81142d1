//! Time, events and randomness: the pieces every other module builds on.
pub mod checks;
pub mod event;
pub mod rng;
pub mod time;
pub mod tournament;

pub use event::EventQueue;
pub use rng::RngStreams;
pub use time::Time;
pub use tournament::Tournament;
