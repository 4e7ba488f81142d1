//! A scheduler wrapper that edits the subflow view before delegating (the hook PHA uses).
//!
//! Design: Linux's `net/mptcp/sched.c` gives schedulers a read-only view; a wrapper such as PHA
//! (P0, Algorithm 1: "if the train is inside a handover range of that subflow's operator, that
//! subflow is excluded") changes only what the inner scheduler *sees* — e.g. clears `established`
//! (excluded as never usable) or sets `backup` — and leaves the decision to it.
//!
//! The filter gets the connection view and a private copy of the subflow views; the originals are
//! untouched. `on_event` is forwarded with the unfiltered views (events carry no connection view
//! to filter with). `rcvbuf_optimisation` and `burst_bytes` are the inner scheduler's.
use super::{ConnView, Decision, SchedEvent, Scheduler, SubflowView};

pub struct Filtered<F> {
    /// The wrapped scheduler.
    pub inner: Box<dyn Scheduler>,
    /// Edits the copy of the views before each decision.
    pub filter: F,
    label: String,
    scratch: Vec<SubflowView>,
    /// `Some(false)`: refuse the receive-buffer optimisation whatever the inner says.
    rcvbuf_opt: Option<bool>,
}

impl<F: FnMut(&ConnView, &mut [SubflowView])> Filtered<F> {
    /// Wraps `inner`; the name is `label(inner)`, e.g. `pha(minrtt)`.
    pub fn new(label: impl Into<String>, inner: Box<dyn Scheduler>, filter: F) -> Self {
        Filtered {
            inner,
            filter,
            label: label.into(),
            scratch: Vec::new(),
            rcvbuf_opt: None,
        }
    }
}

/// The identity filter of [`Filtered::without_rcvbuf_optimisation`].
pub type NoFilter = fn(&ConnView, &mut [SubflowView]);

impl Filtered<NoFilter> {
    /// `inner` unchanged but without the connection-level receive-buffer optimisation
    /// (`rcvbuf_optimisation = false`); keeps the inner's name.
    pub fn without_rcvbuf_optimisation(inner: Box<dyn Scheduler>) -> Self {
        fn keep(_: &ConnView, _: &mut [SubflowView]) {}
        Filtered {
            inner,
            filter: keep as NoFilter,
            label: String::new(),
            scratch: Vec::new(),
            rcvbuf_opt: Some(false),
        }
    }
}

impl<F: FnMut(&ConnView, &mut [SubflowView])> Scheduler for Filtered<F> {
    fn name(&self) -> String {
        if self.label.is_empty() {
            return self.inner.name();
        }
        format!("{}({})", self.label, self.inner.name())
    }

    fn schedule(&mut self, conn: &ConnView, subflows: &[SubflowView]) -> Decision {
        self.scratch.clear();
        self.scratch.extend_from_slice(subflows);
        (self.filter)(conn, &mut self.scratch);
        self.inner.schedule(conn, &self.scratch)
    }

    fn on_event(&mut self, ev: &SchedEvent, subflows: &[SubflowView]) {
        self.inner.on_event(ev, subflows)
    }

    fn rcvbuf_optimisation(&self) -> bool {
        self.rcvbuf_opt.unwrap_or_else(|| self.inner.rcvbuf_optimisation())
    }

    fn event_views(&self) -> bool {
        self.inner.event_views()
    }

    fn view_rates(&self) -> bool {
        // The filters (PHA's handover windows, the subflow blocking baseline) read states and
        // RTTs, never the rates.
        self.inner.view_rates()
    }

    fn burst_bytes(&self) -> u64 {
        self.inner.burst_bytes()
    }
}

#[cfg(test)]
mod tests {
    use super::super::testutil::*;
    use super::super::{blest::Blest, linux_default::LinuxDefault, minrtt::MinRtt};
    use super::*;

    #[test]
    fn excluded_subflow_is_not_used_and_the_original_view_is_untouched() {
        let sfs = [sf(0, 10, 10, 0), sf(1, 50, 10, 0)];
        // Block subflow 0 between 100 and 200 ms (a "handover range").
        let mut s = Filtered::new("pha", Box::new(MinRtt::new()), |c: &ConnView, v: &mut [SubflowView]| {
            if (100 * MS..200 * MS).contains(&c.now) {
                v[0].established = false;
            }
        });
        assert_eq!(s.name(), "pha(minrtt)");
        assert_eq!(s.schedule(&conn(50), &sfs), Decision::Send(0));
        assert_eq!(s.schedule(&conn(150), &sfs), Decision::Send(1));
        assert!(sfs[0].established);
        assert_eq!(s.schedule(&conn(250), &sfs), Decision::Send(0));
    }

    #[test]
    fn backup_marking_makes_minrtt_wait_rather_than_use_it() {
        // Mark the fast one backup while the slow regular one is only cwnd-limited: minRTT waits.
        let sfs = [sf(0, 10, 10, 0), sf(1, 50, 10, 10)];
        let mut s = Filtered::new(
            "mark",
            Box::new(MinRtt::new()),
            |_: &ConnView, v: &mut [SubflowView]| {
                v[0].backup = true;
            },
        );
        assert_eq!(s.schedule(&conn(0), &sfs), Decision::Wait);
    }

    /// Records what it is given.
    struct Recorder(std::rc::Rc<std::cell::RefCell<Vec<String>>>);
    impl Scheduler for Recorder {
        fn name(&self) -> String {
            "rec".into()
        }
        fn schedule(&mut self, _: &ConnView, v: &[SubflowView]) -> Decision {
            self.0
                .borrow_mut()
                .push(format!("schedule {}", v.iter().filter(|s| s.backup).count()));
            Decision::Wait
        }
        fn on_event(&mut self, ev: &SchedEvent, v: &[SubflowView]) {
            self.0
                .borrow_mut()
                .push(format!("event {ev:?} {}", v.iter().filter(|s| s.backup).count()));
        }
    }

    #[test]
    fn forwards_events_with_unfiltered_views_and_capabilities() {
        let log = std::rc::Rc::new(std::cell::RefCell::new(Vec::new()));
        let mut s = Filtered::new(
            "f",
            Box::new(Recorder(log.clone())),
            |_: &ConnView, v: &mut [SubflowView]| {
                v.iter_mut().for_each(|s| s.backup = true);
            },
        );
        let sfs = [sf(0, 10, 10, 0), sf(1, 50, 10, 0)];
        s.schedule(&conn(0), &sfs);
        s.on_event(&SchedEvent::DataAcked { now: 1, bytes: 2 }, &sfs);
        assert_eq!(
            *log.borrow(),
            vec![
                "schedule 2".to_string(),
                "event DataAcked { now: 1, bytes: 2 } 0".into()
            ]
        );

        let b = Filtered::new("f", Box::new(Blest::new()), |_: &ConnView, _: &mut [SubflowView]| {});
        assert!(b.rcvbuf_optimisation());
        assert_eq!(b.burst_bytes(), 0);
        assert!(!b.event_views());
        assert!(s.event_views());
        let l = Filtered::new(
            "f",
            Box::new(LinuxDefault::new()),
            |_: &ConnView, _: &mut [SubflowView]| {},
        );
        assert_eq!(l.burst_bytes(), 65_536);
        assert!(!l.rcvbuf_optimisation());
    }
}
