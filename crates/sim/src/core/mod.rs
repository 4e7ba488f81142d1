//! Time, events and randomness: the pieces every other module builds on.
pub mod checks;
pub mod event;
pub mod rng;
pub mod sorted_deque;
pub mod time;
pub mod tournament;

pub use event::EventQueue;
pub use rng::RngStreams;
pub use sorted_deque::SortedDeque;
pub use time::Time;
pub use tournament::Tournament;
