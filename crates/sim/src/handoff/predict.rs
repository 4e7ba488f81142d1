//! When a flow's mobile host acts on its handoffs: the *episodes* its handoff driver plays.
//!
//! - `predict = "schedule"` (default): the true handoff times. On P3's model this is what the
//!   mobile host knows — it hears the new base station's beacon when the handoff starts (P3
//!   Fig. 1) — and Freeze-TCP's warning comes `warning_ms` before it (an oracle, Goff et al.
//!   assume a prediction from signal strength).
//! - `predict = "table"` (trains): the handover table PHA uses (`[hst] table`, P0) and the
//!   train's GPS fixes. An episode starts at the first fix inside a handover range of the link's
//!   operator — EHN freezes there and Freeze-TCP advertises its zero window, both *before* the
//!   interruption — and ends when the train has left the range or, if later, when a true
//!   handover that began inside it completes (the mobile host knows when it is attached to the
//!   new cell). A range with no handover in it costs a freeze for nothing; a handover that no
//!   range predicted (missed) still gets EHN at its true start (the beacon), and no freeze from
//!   Freeze-TCP, which depends on the prediction.
//!
//! The position is known only at the fixes (as for PHA: the latest fix at or before `t`), so an
//! episode starts and ends on fix times; windows less than [`MERGE_GAP`] (1 s) apart are merged,
//! because GPS noise moves the position across a range's edge back and forth.
use super::HandoffScheme;
use crate::core::time::Time;
use crate::hst::table::HandoverTable;

/// Windows of a table prediction closer than this are one episode (see `from_table`).
pub const MERGE_GAP: Time = crate::core::time::NS_PER_S;

/// One handoff as the mobile host acts on it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Episode {
    /// Freeze-TCP's zero window (None: no warning, Freeze-TCP does nothing in this episode).
    pub warn: Option<Time>,
    /// EHN's Greet and freeze of its own receive window.
    pub start: Time,
    /// EHN's notification leaves (`start + ehn_delay`).
    pub ehn: Time,
    /// The resume (EHN), the reopening ACKs (Freeze-TCP), the duplicate ACKs (fr-after-handoff).
    pub end: Time,
}

/// How well the table predicted this run's handovers (the flow summary reports it).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct PredictionStats {
    /// Episodes started from a handover range.
    pub predicted_episodes: u64,
    /// Of those, episodes with no true handover starting inside them (frozen for nothing).
    pub false_alarms: u64,
    /// True handovers that started outside every predicted episode.
    pub missed_handovers: u64,
}

/// Episodes at the true handoff times.
pub fn from_schedule(intervals: &[(Time, Time)], warning: Time, ehn_delay: Time) -> Vec<Episode> {
    intervals
        .iter()
        .map(|&(s, e)| Episode {
            warn: Some(s.saturating_sub(warning)),
            start: s,
            ehn: s + ehn_delay,
            end: e,
        })
        .collect()
}

/// Episodes from the handover table and the GPS fixes (see the module docs). `intervals` are
/// the true handovers of the flow's link, sorted; `fixes` (time, metres along the track) sorted
/// by time.
pub fn from_table(
    table: &HandoverTable,
    operator: &str,
    fixes: &[(Time, f64)],
    intervals: &[(Time, Time)],
    scheme: HandoffScheme,
    ehn_delay: Time,
) -> (Vec<Episode>, PredictionStats) {
    // Time windows in which the latest fix lies in one of the operator's ranges.
    let mut windows: Vec<(Time, Time)> = Vec::new();
    let mut open: Option<Time> = None;
    for &(t, pos) in fixes {
        match (table.contains(operator, pos), open) {
            (true, None) => open = Some(t),
            (false, Some(a)) => {
                windows.push((a, t));
                open = None;
            }
            _ => {}
        }
    }
    if let Some(a) = open {
        // Still inside at the last fix: the window lasts past the end of the run.
        windows.push((a, Time::MAX / 4));
    }
    // GPS noise makes the position cross a range's edge back and forth (and neighbouring ranges
    // leave short gaps): windows closer than MERGE_GAP are one episode, so the host does not
    // freeze and resume every fix.
    let mut merged_windows: Vec<(Time, Time)> = Vec::with_capacity(windows.len());
    for (a, b) in windows {
        match merged_windows.last_mut() {
            Some(last) if a <= last.1 + MERGE_GAP => last.1 = last.1.max(b),
            _ => merged_windows.push((a, b)),
        }
    }
    let windows = merged_windows;
    let mut stats = PredictionStats::default();
    let mut used = vec![false; intervals.len()];
    let mut episodes: Vec<Episode> = Vec::new();
    for &(a, b) in &windows {
        let mut end = b;
        let mut hit = false;
        for (k, &(s, e)) in intervals.iter().enumerate() {
            if s >= a && s < b {
                end = end.max(e);
                used[k] = true;
                hit = true;
            }
        }
        stats.predicted_episodes += 1;
        stats.false_alarms += u64::from(!hit);
        episodes.push(Episode {
            warn: Some(a),
            start: a,
            ehn: a + ehn_delay,
            end,
        });
    }
    for (k, &(s, e)) in intervals.iter().enumerate() {
        if !used[k] {
            stats.missed_handovers += 1;
            if scheme == HandoffScheme::Ehn {
                episodes.push(Episode {
                    warn: None,
                    start: s,
                    ehn: s + ehn_delay,
                    end: e,
                });
            }
        }
    }
    episodes.sort_by_key(|e| e.start);
    // A missed handover may overlap a window that ended meanwhile: keep episodes disjoint by
    // merging (one freeze covers both).
    let mut merged: Vec<Episode> = Vec::with_capacity(episodes.len());
    for e in episodes {
        match merged.last_mut() {
            Some(m) if e.start < m.end => m.end = m.end.max(e.end),
            _ => merged.push(e),
        }
    }
    (merged, stats)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::time::NS_PER_MS;
    use crate::hst::table::ObservedHandover;

    const MS: Time = NS_PER_MS;

    /// A table with one range of operator A, 1000-1010 m widened by 15 m: [985, 1025] m.
    fn table() -> HandoverTable {
        let mut t = HandoverTable::new();
        t.learn(
            &[ObservedHandover {
                operator: "A".into(),
                gps_start_m: 1000.0,
                gps_end_m: 1010.0,
            }],
            15.0,
        );
        t
    }

    /// Fixes every 100 ms at 100 m/s (360 km/h) from 900 m.
    fn fixes() -> Vec<(Time, f64)> {
        (0..30)
            .map(|k| (k as Time * 100 * MS, 900.0 + 10.0 * k as f64))
            .collect()
    }

    #[test]
    fn an_episode_spans_the_range_and_the_handover_inside_it() {
        // In range from the fix at 900 ms (990 m) to the first fix past 1025 m (1030 m at 1300 ms).
        let ho = [(1000 * MS, 1050 * MS)];
        let (eps, st) = from_table(&table(), "A", &fixes(), &ho, HandoffScheme::Ehn, 0);
        assert_eq!(
            eps,
            vec![Episode {
                warn: Some(900 * MS),
                start: 900 * MS,
                ehn: 900 * MS,
                end: 1300 * MS
            }]
        );
        assert_eq!(
            st,
            PredictionStats {
                predicted_episodes: 1,
                false_alarms: 0,
                missed_handovers: 0
            }
        );
        // A handover that outlasts the range extends the episode to its end.
        let (eps, _) = from_table(
            &table(),
            "A",
            &fixes(),
            &[(1200 * MS, 1800 * MS)],
            HandoffScheme::FreezeTcp,
            0,
        );
        assert_eq!(eps[0].end, 1800 * MS);
    }

    #[test]
    fn false_alarms_and_missed_handovers_are_counted() {
        // No handover in the range; one at 2500 ms outside it.
        let ho = [(2500 * MS, 2550 * MS)];
        let (eps, st) = from_table(&table(), "A", &fixes(), &ho, HandoffScheme::Ehn, 5 * MS);
        assert_eq!(
            st,
            PredictionStats {
                predicted_episodes: 1,
                false_alarms: 1,
                missed_handovers: 1
            }
        );
        // EHN still acts on the missed one at its true start; the false alarm freezes for the range.
        assert_eq!(eps.len(), 2);
        assert_eq!(
            eps[1],
            Episode {
                warn: None,
                start: 2500 * MS,
                ehn: 2505 * MS,
                end: 2550 * MS
            }
        );
        // Freeze-TCP cannot act on what was not predicted.
        let (eps, _) = from_table(&table(), "A", &fixes(), &ho, HandoffScheme::FreezeTcp, 0);
        assert_eq!(eps.len(), 1);
        // Another operator's ranges predict nothing for this one.
        let (eps, st) = from_table(&table(), "B", &fixes(), &ho, HandoffScheme::Ehn, 0);
        assert_eq!((eps.len(), st.predicted_episodes, st.missed_handovers), (1, 0, 1));
    }

    #[test]
    fn jitter_at_a_range_edge_is_one_episode() {
        // In, out for one fix, in again, then out for good: one window, 900-1500 ms.
        let fx: Vec<(Time, f64)> = [980.0, 990.0, 1030.0, 1000.0, 1020.0, 1040.0, 1100.0, 1200.0]
            .iter()
            .enumerate()
            .map(|(k, &p)| ((8 + k as Time) * 100 * MS, p))
            .collect();
        let (eps, st) = from_table(&table(), "A", &fx, &[], HandoffScheme::Ehn, 0);
        assert_eq!(st.predicted_episodes, 1);
        assert_eq!((eps[0].start, eps[0].end), (900 * MS, 1300 * MS));
        // Two passes 2 s apart stay two episodes.
        let mut two = fx.clone();
        two.extend(fx.iter().map(|&(t, p)| (t + 2000 * MS, p)));
        assert_eq!(
            from_table(&table(), "A", &two, &[], HandoffScheme::Ehn, 0)
                .1
                .predicted_episodes,
            2
        );
    }

    #[test]
    fn the_schedule_warns_before_each_handoff() {
        let eps = from_schedule(&[(100 * MS, 200 * MS)], 300 * MS, 0);
        assert_eq!(
            eps,
            vec![Episode {
                warn: Some(0),
                start: 100 * MS,
                ehn: 100 * MS,
                end: 200 * MS
            }]
        );
    }
}
