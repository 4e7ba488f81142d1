//! PHA — proactive handover-aware scheduling (P0, Algorithm 1).
//!
//! On every scheduling decision, a subflow whose operator has a handover range (from the
//! [`HandoverTable`]) containing the train's current GPS position is excluded — shown to the
//! wrapped scheduler as not established — "until the handover process completes" (P0 §3: "열차가
//! 핸드오버가 발생하는 위치에 있는 경우, 핸드오버 프로세스가 완료될 때까지 정상 서브플로우를 통해서만
//! 패킷을 전송한다"), or until the train leaves the range if no handover completes inside it;
//! otherwise the wrapped scheduler (minRTT, ECF, BLEST, Peekaboo, ...) decides. Location-based,
//! not time-based, because trains run late (P0 §3).
//!
//! Choices: the completion is the end of that operator's handover interruption (the modem's
//! RRC reconfiguration complete; the train side knows it, and in P0's simulation the scheduler
//! does too). A handover counts as "this range's" when the GPS fix at its completion lies inside
//! the range. When no GPS position is known (no train in the scenario, or before the first fix)
//! nothing is excluded. If every subflow is excluded, the inner scheduler sees none usable and
//! waits — P0 assumes the two operators never hand over at the same place.
use super::table::{HandoverTable, Range};
use crate::core::time::Time;
use crate::mptcp::sched::SubflowView;

/// The filter PHA applies to the subflow views at GPS position `position_m` (metres along the
/// track; `None` before the first fix). `operators[i]` is subflow i's operator (`None`: never
/// excluded). PHA owns its GPS view: the wrapper ([`super::wrappers::WrapperPlan::Pha`]) looks the
/// position up in the train's fixes at the decision time.
pub fn exclude_in_handover_ranges(
    table: &HandoverTable,
    operators: &[Option<String>],
    position_m: Option<f64>,
    views: &mut [SubflowView],
) {
    exclude_until_handover_done(table, operators, position_m, views, |_, _| false);
}

/// As [`exclude_in_handover_ranges`], but a subflow whose operator's handover has completed
/// inside the current range is usable again: `done(subflow, range)` says whether it has (P0's
/// "until the handover process completes").
pub fn exclude_until_handover_done(
    table: &HandoverTable,
    operators: &[Option<String>],
    position_m: Option<f64>,
    views: &mut [SubflowView],
    done: impl Fn(usize, &Range) -> bool,
) {
    let Some(pos) = position_m else { return };
    for v in views.iter_mut() {
        if let Some(Some(op)) = operators.get(v.id) {
            if let Some(r) = table.range_at(op, pos) {
                if !done(v.id, r) {
                    v.established = false;
                }
            }
        }
    }
}

/// Whether one of `completions` (sorted handover end times of a subflow's operator) at or
/// before `now` happened while the GPS position (`gps`, sorted fixes) was inside `range`.
pub fn completed_in_range(completions: &[Time], now: Time, gps: &[(Time, f64)], range: &Range) -> bool {
    let i = completions.partition_point(|&t| t <= now);
    i > 0 && super::wrappers::gps_at(gps, completions[i - 1]).is_some_and(|p| range.start_m <= p && p <= range.end_m)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::time::NS_PER_S;
    use crate::hst::table::ObservedHandover;
    use crate::hst::wrappers::WrapperPlan;
    use crate::mptcp::sched::{build, ConnView, Decision, Scheduler, SchedulerConfig, SchedulerKind, SegmentInfo};
    use std::rc::Rc;

    /// PHA over `inner` with one GPS fix per second: at second k the train is at `positions[k]`.
    fn pha(inner: Box<dyn Scheduler>, table: Rc<HandoverTable>, operators: Vec<Option<String>>) -> Box<dyn Scheduler> {
        let gps: Vec<(Time, f64)> = POSITIONS
            .iter()
            .enumerate()
            .map(|(k, &p)| ((k as Time + 1) * NS_PER_S, p))
            .collect();
        WrapperPlan::Pha {
            table,
            operators,
            gps: gps.into(),
            completions: Vec::new(),
        }
        .wrap(inner)
    }

    const POSITIONS: [f64; 5] = [985.0, 1000.0, 1024.9, 1100.0, 0.0];

    /// The decision time at which the train is at `pos` (t = 0: before the first fix).
    fn at(pos: Option<f64>) -> Time {
        pos.map_or(0, |p| {
            (POSITIONS.iter().position(|&x| x == p).expect("a listed position") as Time + 1) * NS_PER_S
        })
    }

    fn view(id: usize, srtt_ms: u64) -> SubflowView {
        SubflowView {
            id,
            established: true,
            cwnd: 10,
            srtt: srtt_ms * 1_000_000,
            mss: 1448,
            ..Default::default()
        }
    }

    fn conn(pos: Option<f64>) -> ConnView {
        ConnView {
            now: at(pos),
            send_window_left: 1 << 30,
            send_window: 1 << 30,
            unsent_bytes: 0,
            segment: SegmentInfo {
                dsn: 0,
                len: 1448,
                reinjection: false,
                sent_on: 0,
            },
        }
    }

    #[test]
    fn never_schedules_on_a_subflow_inside_its_operators_handover_range() {
        let mut table = HandoverTable::new();
        table.learn(
            &[ObservedHandover {
                operator: "A".into(),
                gps_start_m: 1000.0,
                gps_end_m: 1010.0,
            }],
            15.0,
        );
        let table = Rc::new(table);
        let ops = vec![Some("A".to_string()), Some("B".to_string())];
        for name in SchedulerKind::names() {
            let inner = build(&SchedulerConfig::named(name), 1).unwrap();
            let mut s = pha(inner, table.clone(), ops.clone());
            assert_eq!(s.name(), format!("pha({name})"));
            // Subflow 0 (operator A) is the faster one; at 1000 m it must never be chosen.
            for pos in [985.0, 1000.0, 1024.9] {
                let d = s.schedule(&conn(Some(pos)), &[view(0, 10), view(1, 30)]);
                let uses0 = match &d {
                    Decision::Send(i) => *i == 0,
                    Decision::SendMany(v) => v.contains(&0),
                    Decision::Wait => false,
                };
                assert!(!uses0, "{name} at {pos} m chose subflow 0: {d:?}");
            }
        }
        // Outside the range minRTT uses the faster subflow again.
        let mut s = pha(
            build(&SchedulerConfig::named("minrtt"), 1).unwrap(),
            table.clone(),
            ops.clone(),
        );
        assert_eq!(
            s.schedule(&conn(Some(1100.0)), &[view(0, 10), view(1, 30)]),
            Decision::Send(0)
        );
        assert_eq!(s.schedule(&conn(None), &[view(0, 10), view(1, 30)]), Decision::Send(0));
    }

    /// P0: blocked "until the handover process completes": once the operator's handover has
    /// completed inside the range, the subflow is used again although the train is still in it.
    #[test]
    fn a_handover_completed_inside_the_range_ends_the_exclusion() {
        let mut table = HandoverTable::new();
        table.learn(
            &[ObservedHandover {
                operator: "A".into(),
                gps_start_m: 1000.0,
                gps_end_m: 1010.0,
            }],
            15.0,
        );
        let table = Rc::new(table); // [985, 1025]
        let gps: Vec<(Time, f64)> = POSITIONS
            .iter()
            .enumerate()
            .map(|(k, &p)| ((k as Time + 1) * NS_PER_S, p))
            .collect();
        let ops = vec![Some("A".to_string()), Some("B".to_string())];
        let plan = |completions: Vec<Vec<Time>>| WrapperPlan::Pha {
            table: table.clone(),
            operators: ops.clone(),
            gps: gps.clone().into(),
            completions,
        };
        // The handover completes at 2.5 s (GPS at 1000 m, inside the range).
        let mut s = plan(vec![vec![2 * NS_PER_S + NS_PER_S / 2], vec![]])
            .wrap(build(&SchedulerConfig::named("minrtt"), 1).unwrap());
        assert_eq!(
            s.schedule(&conn(Some(1000.0)), &[view(0, 10), view(1, 30)]),
            Decision::Send(1),
            "before the completion"
        );
        assert_eq!(
            s.schedule(&conn(Some(1024.9)), &[view(0, 10), view(1, 30)]),
            Decision::Send(0),
            "after it, still in the range"
        );
        // A completion before the range (GPS at 0 m... none here: at 1 s the train is at 985 m,
        // in the range) — one long before, outside the range, does not end the exclusion.
        let mut s = plan(vec![vec![NS_PER_S / 2], vec![]]).wrap(build(&SchedulerConfig::named("minrtt"), 1).unwrap());
        assert_eq!(
            s.schedule(&conn(Some(1024.9)), &[view(0, 10), view(1, 30)]),
            Decision::Send(1)
        );
    }
}
