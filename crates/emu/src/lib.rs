//! The userspace link emulator: the simulator's link model (`mobipath_sim::link`) applied in
//! real time to IP packets read from and written to TUN devices (see `README.md`).
//!
//! - [`config`]: the JSON run description (the paths with their links and sides, the time bound);
//! - [`line`](mod@line): the bookkeeping around a [`LinkDir`](mobipath_sim::link::LinkDir) — raw frames
//!   kept beside the model's `Packet`s, and the delay line ordered by arrival time;
//! - [`chain`]: several links in series (a path), hand-overs in model-time order;
//! - [`forward`]: one direction's real-time loop over every path (`ppoll` + a short busy-wait) and its timing
//!   statistics;
//! - [`tun`]: TUN devices created inside named network namespaces;
//! - [`bench`](mod@bench): the machinery benchmark over socketpairs;
//! - [`capture`]: pcapng captures of each link direction, in the simulator's layout;
//! - [`relay`]: the independent reference forwarder (fixed delay + Bernoulli loss, no link model).
pub mod bench;
pub mod capture;
pub mod chain;
pub mod cli;
pub mod config;
pub mod forward;
pub mod line;
pub mod relay;
pub mod tun;

use std::sync::atomic::{AtomicBool, Ordering};

/// Set by SIGTERM/SIGINT (or by the caller): every direction loop stops soon after.
pub static STOP: AtomicBool = AtomicBool::new(false);

extern "C" fn on_signal(_sig: libc::c_int) {
    STOP.store(true, Ordering::SeqCst);
}

/// Installs the SIGTERM/SIGINT handlers, asks the kernel to send SIGTERM when the parent dies,
/// and sets the timer slack to 1 ns so `ppoll` wakes up when asked.
pub fn install_process_guards() {
    unsafe {
        let h = on_signal as extern "C" fn(libc::c_int) as libc::sighandler_t;
        libc::signal(libc::SIGTERM, h);
        libc::signal(libc::SIGINT, h);
        libc::signal(libc::SIGHUP, h);
        libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGTERM as libc::c_ulong, 0, 0, 0);
        libc::prctl(libc::PR_SET_TIMERSLACK, 1 as libc::c_ulong, 0, 0, 0);
    }
}
