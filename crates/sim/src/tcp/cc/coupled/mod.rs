//! Coupled congestion control for MPTCP subflows (LIA, OLIA, Balia, wVegas).
//!
//! Each subflow has its own [`CongestionControl`](super::CongestionControl) instance; the
//! instances of one connection share a [`Coupling`] through which they read every subflow's
//! window and RTT (the narrow interface of design.md: Linux's coupled algorithms walk
//! `mptcp_for_each_sk` the same way). The connection core refreshes the shared table before it
//! hands an ACK to a subflow, so values are current at each decision.
use crate::core::Time;
use std::cell::RefCell;
use std::rc::Rc;

/// One subflow's entry in the shared table.
#[derive(Clone, Debug, Default)]
pub struct SubflowCc {
    /// Established and able to send (backup subflows included, as Linux includes them).
    pub active: bool,
    /// Congestion window in segments.
    pub cwnd: u32,
    /// Slow-start threshold in segments.
    pub ssthresh: u32,
    /// Smoothed RTT in ns (0 = no sample yet).
    pub srtt: Time,
    /// Minimum RTT in ns (Time::MAX = none).
    pub min_rtt: Time,
    pub mss: u32,
    /// Bytes acknowledged on this subflow so far (OLIA's loss intervals; rates for wVegas).
    pub bytes_acked: u64,
    pub backup: bool,
    /// This subflow's loss events as its own controller saw them. Written only by that
    /// controller (OLIA): the connection core's refresh leaves it alone.
    pub losses: LossRecord,
}

/// A subflow's loss events, for its siblings to read (Linux's OLIA keeps `mptcp_loss1..3` in
/// each subflow's congestion-control state and `mptcp_get_epsilon` walks the subflows to read
/// them). Byte counts are the subflow's bytes ACKed at the moment named.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LossRecord {
    /// Loss events counted.
    pub events: u64,
    /// Bytes ACKed at the last-but-one loss event (Linux `mptcp_loss1`).
    pub prev: u64,
    /// Bytes ACKed at the last loss event (`mptcp_loss2`).
    pub last: u64,
    /// Bytes ACKed when the controller last ran congestion avoidance (`mptcp_loss3`).
    pub now: u64,
}

impl LossRecord {
    /// OLIA's loss interval `l_r = max(l1r, l2r)` (Khalili et al. 2013 §V): `l1r` the bytes
    /// between the last two losses, `l2r` the bytes since the last loss.
    pub fn interval(&self) -> u64 {
        self.now.saturating_sub(self.last).max(self.last - self.prev)
    }
    /// Entry into Recovery or Loss (Linux `mptcp_olia_set_state`): a new loss event unless
    /// nothing was ACKed since the last one (`mptcp_loss3 == mptcp_loss2`). Returns whether it
    /// counted.
    pub fn on_loss(&mut self) -> bool {
        if self.now > self.last {
            self.prev = self.last;
            self.last = self.now;
            self.events += 1;
            true
        } else {
            false
        }
    }
}

/// Shared by the subflow controllers of one connection.
pub type Coupling = Rc<RefCell<Vec<SubflowCc>>>;

pub fn new_coupling(n_subflows: usize) -> Coupling {
    Rc::new(RefCell::new(vec![SubflowCc::default(); n_subflows]))
}

pub mod balia;
pub mod lia;
pub mod olia;
pub mod wvegas;

#[cfg(test)]
mod fluid;

use super::{CongestionControl as Cc, Tcb};

/// Creates the coupled algorithm `name` for subflow `index` of the connection that owns
/// `coupling` (names and constructors: the registry [`super::CcKind`]).
pub fn build(name: &str, coupling: Coupling, index: usize) -> Option<Box<dyn Cc>> {
    super::CcKind::from_name(name)?.build_coupled(coupling, index)
}

/// One subflow as the coupled algorithms see it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Path {
    /// Subflow index in the [`Coupling`] table.
    pub index: usize,
    /// Congestion window in segments.
    pub cwnd: u32,
    /// Smoothed RTT in ns (> 0).
    pub rtt: Time,
    pub mss: u32,
}

impl Path {
    /// Window in segments per ns (OLIA's and Balia's `w/rtt`).
    pub fn rate(&self) -> f64 {
        self.cwnd as f64 / self.rtt as f64
    }
}

/// The subflows that take part in the coupling, in table order: active entries with an RTT
/// sample (Linux `mptcp_sk_can_send(sk) && tp->srtt_us`; backup subflows count like any other).
/// Subflow `me` is described by its own `tcb`, which may be newer than its table entry; it is
/// left out while it has no RTT sample. Returns the list and the position of `me` in it.
pub fn paths(coupling: &Coupling, me: usize, tcb: &Tcb) -> (Vec<Path>, Option<usize>) {
    let mut out = Vec::new();
    let pos = paths_into(coupling, me, tcb, &mut out);
    (out, pos)
}

/// [`paths`] into a buffer: clears `out`, fills it and returns the position of `me`. (LIA's
/// per-ACK threshold reads the table directly, `lia::threshold_from_table`, with the same
/// selection and order.)
pub fn paths_into(coupling: &Coupling, me: usize, tcb: &Tcb, out: &mut Vec<Path>) -> Option<usize> {
    let table = coupling.borrow();
    out.clear();
    let mut pos = None;
    for i in 0..table.len().max(me + 1) {
        let p = if i == me {
            Path {
                index: i,
                cwnd: tcb.cwnd,
                rtt: tcb.srtt,
                mss: tcb.mss,
            }
        } else {
            let Some(e) = table.get(i).filter(|e| e.active) else {
                continue;
            };
            Path {
                index: i,
                cwnd: e.cwnd,
                rtt: e.srtt,
                mss: if e.mss == 0 { tcb.mss } else { e.mss },
            }
        };
        if p.rtt == 0 {
            continue;
        }
        if i == me {
            pos = Some(out.len());
        }
        out.push(p);
    }
    pos
}

/// Writes subflow `me`'s window back into the table, so that siblings handling an ACK in the
/// same instant see it.
pub fn publish(coupling: &Coupling, me: usize, tcb: &Tcb) {
    if let Some(e) = coupling.borrow_mut().get_mut(me) {
        e.cwnd = tcb.cwnd;
        e.ssthresh = tcb.ssthresh;
    }
}

/// `x` rounded down to an ACK count for [`Tcb::cong_avoid_ai`]; the small slack keeps values
/// that are integers in exact arithmetic (e.g. 4·cwnd for two equal subflows) from dropping
/// by one through rounding error.
fn ack_count(x: f64) -> u32 {
    if x.is_finite() {
        (x + 1e-9).floor().clamp(1.0, u32::MAX as f64) as u32
    } else {
        u32::MAX
    }
}

/// Reno's loss response, shared by LIA, OLIA and wVegas: ssthresh = max(cwnd/2, 2).
fn reno_ssthresh(tcb: &Tcb) -> u32 {
    (tcb.cwnd / 2).max(2)
}

/// The first half of Linux `tcp_reno_cong_avoid`, shared by LIA, OLIA and Balia: no growth
/// unless cwnd-limited, then Reno slow start. Returns the ACKed segments left for congestion
/// avoidance, or `None` if there are none.
fn slow_start_part(tcb: &mut Tcb, acked: u32) -> Option<u32> {
    if !tcb.cwnd_limited {
        return None;
    }
    let left = if tcb.in_slow_start() {
        tcb.slow_start(acked)
    } else {
        acked
    };
    (left > 0).then_some(left)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn build_by_name() {
        for name in super::super::CcKind::coupled_names() {
            let c = new_coupling(2);
            assert_eq!(build(name, c.clone(), 1).unwrap().name(), name);
        }
        assert!(build("reno", new_coupling(1), 0).is_none());
    }

    #[test]
    fn paths_take_own_entry_from_tcb_and_publish_writes_it_back() {
        let c = new_coupling(3);
        c.borrow_mut()[0] = SubflowCc {
            active: true,
            cwnd: 7,
            srtt: 5,
            mss: 1000,
            ..Default::default()
        };
        c.borrow_mut()[2] = SubflowCc {
            active: true,
            cwnd: 9,
            srtt: 0,
            ..Default::default()
        };
        let mut tcb = Tcb::new(1448, 12);
        tcb.srtt = 40;
        // Entry 1 is stale (inactive) in the table but is "me"; entry 2 has no RTT sample.
        let (ps, me) = paths(&c, 1, &tcb);
        assert_eq!(me, Some(1));
        assert_eq!(
            ps,
            vec![
                Path {
                    index: 0,
                    cwnd: 7,
                    rtt: 5,
                    mss: 1000
                },
                Path {
                    index: 1,
                    cwnd: 12,
                    rtt: 40,
                    mss: 1448
                },
            ]
        );
        tcb.ssthresh = 6;
        publish(&c, 1, &tcb);
        assert_eq!((c.borrow()[1].cwnd, c.borrow()[1].ssthresh), (12, 6));
        // A subflow beyond the table (not yet added) still sees itself.
        let (ps, me) = paths(&c, 4, &tcb);
        assert_eq!((ps.len(), me), (2, Some(1)));
        publish(&c, 4, &tcb);
    }
}
