//! TCP endpoints as state machines driven by packets and timers with an explicit `now`
//! (they never read a clock): [`sender::TcpSender`], [`receiver::TcpReceiver`], the RTT
//! estimator and the congestion-control algorithms in [`cc`].
pub mod bsd_timer;
pub mod cc;
pub mod receiver;
pub mod rtt;
pub mod sender;
