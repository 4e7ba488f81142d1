//! Handover-aware scheduler wrappers (P0): the registry of wrapper names and their construction.
//!
//! A scenario writes a wrapper around a scheduler as `NAME(INNER)` — `pha(minrtt)` — and the
//! scenario layer turns that into a [`Wrapper`] field of the plan ([`split_wrapper`] is the only
//! place that reads the prefix form). Each wrapper filters the subflow view before the inner
//! scheduler decides ([`crate::mptcp::sched::Filtered`]) and owns what it needs to know about the
//! train — the handover table and the GPS fixes (PHA) or the true handover intervals (oracle,
//! blocking) — so nothing in the MPTCP core knows about trains.
use super::pha::{completed_in_range, exclude_until_handover_done};
use super::table::HandoverTable;
use crate::core::time::{Time, NS_PER_MS};
use crate::mptcp::sched::{ConnView, Filtered, Scheduler, SchedulerConfig, SubflowView};
use std::rc::Rc;

/// A handover-aware wrapper around a scheduler.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Wrapper {
    /// P0's PHA: exclusion while the GPS position is in a learned handover range, until the
    /// operator's handover completes (needs a table).
    Pha,
    /// Knows the true handover intervals: excludes a subflow from one RTT before each start to
    /// the end (an upper bound for prediction).
    Oracle,
    /// Park et al. 2022 "subflow blocking": at a detected handover start the subflow's cwnd
    /// collapses and it gets no new data until the handover ends; normal recovery after.
    Block,
}

impl Wrapper {
    /// The registry: (wrapper, name as written before the parenthesis).
    pub const ALL: &'static [(Wrapper, &'static str)] = &[
        (Wrapper::Pha, "pha"),
        (Wrapper::Oracle, "oracle"),
        (Wrapper::Block, "block"),
    ];

    pub fn name(self) -> &'static str {
        Self::ALL
            .iter()
            .find(|(w, _)| *w == self)
            .map(|(_, n)| *n)
            .expect("every wrapper is listed in ALL")
    }

    /// Whether it needs a handover table (`[hst] table`) besides a train.
    pub fn needs_table(self) -> bool {
        self == Wrapper::Pha
    }
}

/// `pha(NAME)` / `oracle(NAME)` / `block(NAME)` → (wrapper, NAME's config with the same
/// parameters); anything else → (None, itself).
pub fn split_wrapper(cfg: &SchedulerConfig) -> (Option<Wrapper>, SchedulerConfig) {
    for &(w, name) in Wrapper::ALL {
        if let Some(inner) = cfg
            .name
            .strip_prefix(name)
            .and_then(|r| r.strip_prefix('('))
            .and_then(|r| r.strip_suffix(')'))
        {
            let mut c = cfg.clone();
            c.name = inner.trim().to_string();
            return (Some(w), c);
        }
    }
    (None, cfg.clone())
}

/// What a wrapper knows about the train, resolved for one connection.
#[derive(Clone)]
pub enum WrapperPlan {
    /// PHA: the table, each subflow's operator (`None`: never excluded), the GPS fixes
    /// `(time, metres along the track)` the train's receiver produces, and per subflow the times
    /// its operator's handovers completed (sorted; the modem reports them).
    Pha {
        table: Rc<HandoverTable>,
        operators: Vec<Option<String>>,
        gps: Rc<[(Time, f64)]>,
        completions: Vec<Vec<Time>>,
    },
    /// The true handover intervals `[start, end)` of each subflow's operator.
    Oracle { windows: Vec<Vec<(Time, Time)>> },
    /// The same, for subflow blocking (the cwnd collapse itself is a driver's action).
    Block { windows: Vec<Vec<(Time, Time)>> },
}

impl WrapperPlan {
    pub fn wrapper(&self) -> Wrapper {
        match self {
            WrapperPlan::Pha { .. } => Wrapper::Pha,
            WrapperPlan::Oracle { .. } => Wrapper::Oracle,
            WrapperPlan::Block { .. } => Wrapper::Block,
        }
    }

    /// Wraps `inner` (its name becomes `wrapper(inner)`).
    pub fn wrap(&self, inner: Box<dyn Scheduler>) -> Box<dyn Scheduler> {
        match self.clone() {
            WrapperPlan::Pha {
                table,
                operators,
                gps,
                completions,
            } => Box::new(Filtered::new(
                "pha",
                inner,
                move |conn: &ConnView, views: &mut [SubflowView]| {
                    let done = |k: usize, r: &super::table::Range| {
                        completions
                            .get(k)
                            .is_some_and(|c| completed_in_range(c, conn.now, &gps, r))
                    };
                    exclude_until_handover_done(&table, &operators, gps_at(&gps, conn.now), views, done)
                },
            )),
            WrapperPlan::Oracle { windows } => Box::new(Filtered::new(
                "oracle",
                inner,
                move |conn: &ConnView, views: &mut [SubflowView]| {
                    for v in views.iter_mut() {
                        let lead = v.srtt.max(NS_PER_MS);
                        if windows[v.id].iter().any(|&(s, e)| conn.now + lead >= s && conn.now < e) {
                            v.established = false;
                        }
                    }
                },
            )),
            WrapperPlan::Block { windows } => Box::new(Filtered::new(
                "block",
                inner,
                move |conn: &ConnView, views: &mut [SubflowView]| {
                    for v in views.iter_mut() {
                        if windows[v.id].iter().any(|&(s, e)| conn.now >= s && conn.now < e) {
                            v.established = false;
                        }
                    }
                },
            )),
        }
    }
}

/// The latest GPS fix at or before `t` (`None` before the first).
pub fn gps_at(fixes: &[(Time, f64)], t: Time) -> Option<f64> {
    let i = fixes.partition_point(|&(ts, _)| ts <= t);
    (i > 0).then(|| fixes[i - 1].1)
}
