//! Behaviour tests of a link direction against what the model must do: delivered rate =
//! configured capacity, exact delays, drop-tail accounting, loss statistics within
//! binomial bounds, Gilbert–Elliott timing, outages, reordering, determinism.
use super::*;

use crate::core::time::{Time, NS_PER_MS, NS_PER_S, NS_PER_US};
use crate::core::RngStreams;
use crate::packet::{Packet, PacketKind, HEADER_BYTES};
use std::path::Path;

/// A data packet of `wire` bytes on the wire.
fn pkt(id: u64, wire: u32) -> Packet {
    let mut p = Packet::new(PacketKind::Data);
    p.id = id;
    p.len = wire - HEADER_BYTES;
    p
}

fn rng(name: &str) -> DirStreams {
    DirStreams::named(&RngStreams::new(42), name)
}

fn dir(cap: Capacity, delay_ms: f64, queue: QueueLimit, outages: &[Outage]) -> LinkDir {
    dir_with(cap, delay_ms, queue, outages, None, None, rng("t"))
}

fn dir_with(
    cap: Capacity,
    delay_ms: f64,
    queue: QueueLimit,
    outages: &[Outage],
    loss: Option<LossConfig>,
    reorder: Option<ReorderConfig>,
    r: DirStreams,
) -> LinkDir {
    let spec = DirSpec {
        capacity: cap,
        token_bucket: None,
        delay: crate::core::time::from_ms_f64(delay_ms),
        queue,
        loss,
        reorder,
    };
    LinkDir::new(&spec, outages, r)
}

fn mbps(x: f64) -> Capacity {
    Capacity::Constant { bps: (x * 1e6) as u64 }
}

/// Keeps `d` saturated with `wire`-byte packets (queue refilled to `fill` at every event)
/// until the next event would be after `end`. Returns what reached the far end.
fn run_saturated(d: &mut LinkDir, end: Time, fill: usize, wire: u32) -> Vec<(Time, Packet)> {
    let mut out = Vec::new();
    let (mut now, mut id) = (0, 0);
    loop {
        while d.queue_packets() < fill {
            if d.enqueue(now, pkt(id, wire)).is_err() {
                break;
            }
            id += 1;
        }
        match d.next_wakeup() {
            Some(t) if t <= end => {
                now = t;
                d.wake(now, &mut out);
            }
            _ => break,
        }
    }
    out
}

/// Feeds `arrivals` (sorted by time) and processes wakeups in time order (a wakeup at
/// the same instant as an arrival goes first), until `end`.
fn drive(d: &mut LinkDir, arrivals: &[(Time, Packet)], end: Time) -> Vec<(Time, Packet)> {
    let mut out = Vec::new();
    let mut i = 0;
    loop {
        let ta = arrivals.get(i).map_or(NEVER, |a| a.0);
        let tw = d.next_wakeup().unwrap_or(NEVER);
        if ta.min(tw) > end {
            break;
        }
        if tw <= ta {
            d.wake(tw, &mut out);
        } else {
            let _ = d.enqueue(ta, arrivals[i].1.clone());
            i += 1;
        }
    }
    out
}

use crate::core::time::NEVER;

fn check_invariants(d: &LinkDir) {
    let s = d.stats();
    assert_eq!(s.departed_packets, s.delivered_packets + s.drops_loss, "{s:?}");
    assert!(s.enqueued_packets >= s.departed_packets + s.queue_packets, "{s:?}");
    // Every arrival ends exactly once: in the queue, departed, or dropped (queue full,
    // refused in an outage, or flushed by one).
    assert_eq!(
        s.arrived_packets,
        s.departed_packets + s.queue_packets + s.drops_queue + s.drops_outage + s.drops_forwarding,
        "{s:?}"
    );
    assert!(s.drops_forwarding <= s.forwarded, "{s:?}");
    assert_eq!(s.queue_packets, d.queue_packets() as u64);
    assert_eq!(s.queue_bytes, d.queue_bytes());
}

/// Bits that left the transmitter (arrival − delay) in [a, b).
fn bits_departed(out: &[(Time, Packet)], delay: Time, a: Time, b: Time) -> f64 {
    out.iter()
        .filter(|(t, _)| (a..b).contains(&(t - delay)))
        .map(|(_, p)| p.wire_bytes() as f64 * 8.0)
        .sum()
}

#[test]
fn single_packet_delay_is_propagation_plus_serialization() {
    let mut d = dir(mbps(10.0), 20.0, QueueLimit::Packets(10), &[]);
    let t0 = 5 * NS_PER_MS;
    d.enqueue(t0, pkt(1, 1500)).unwrap();
    assert_eq!(d.next_wakeup(), Some(t0 + 1_200_000)); // 12000 bits at 10 Mbit/s = 1.2 ms
    let mut out = Vec::new();
    d.wake(t0 + 1_199_999, &mut out); // early: nothing
    assert!(out.is_empty());
    d.wake(t0 + 1_200_000, &mut out);
    assert_eq!(out.len(), 1);
    assert_eq!(out[0].0, t0 + 1_200_000 + 20 * NS_PER_MS);
    assert_eq!(d.next_wakeup(), None);
    check_invariants(&d);
}

#[test]
fn constant_rate_saturated_delivers_the_configured_rate() {
    for rate in [100.0, 11.457024, 0.5] {
        let mut d = dir(mbps(rate), 10.0, QueueLimit::Packets(1000), &[]);
        let end = 4 * NS_PER_S;
        let out = run_saturated(&mut d, end, 50, 1500);
        let bits = bits_departed(&out, 10 * NS_PER_MS, 0, end);
        let want = rate * 1e6 * 4.0;
        assert!((bits - want).abs() <= 12_000.0, "rate {rate}: {bits} bits vs {want}");
        check_invariants(&d);
    }
}

/// Back-to-back departures are exact: the n-th finishes at ceil(n·bits/rate), not at
/// the sum of n rounded-up serialisation times.
#[test]
fn back_to_back_departures_do_not_accumulate_rounding() {
    let bps = 11_457_024u64;
    let mut d = dir(Capacity::Constant { bps }, 0.0, QueueLimit::Packets(5000), &[]);
    for i in 0..3000 {
        d.enqueue(0, pkt(i, 1500)).unwrap();
    }
    let mut out = Vec::new();
    d.wake(NEVER - 1, &mut out);
    assert_eq!(out.len(), 3000);
    for (n, (t, _)) in out.iter().enumerate() {
        let n = n as u128 + 1;
        let want = (n * 12_000 * NS_PER_S as u128).div_ceil(bps as u128) as u64;
        assert_eq!(*t, want, "packet {n}");
    }
}

/// The same with mixed sizes (three, cycling, so the link's remembered quotients are evicted and
/// hit in turn; some carries are nonzero): still the exact cumulative departures.
#[test]
fn back_to_back_departures_of_mixed_sizes_are_exact() {
    let bps = 11_457_024u64;
    let sizes = [1500u32, 52, 1500, 640, 52, 52, 1500, 640];
    let mut d = dir(Capacity::Constant { bps }, 0.0, QueueLimit::Packets(5000), &[]);
    for i in 0..3000 {
        d.enqueue(0, pkt(i, sizes[i as usize % sizes.len()])).unwrap();
    }
    let mut out = Vec::new();
    d.wake(NEVER - 1, &mut out);
    assert_eq!(out.len(), 3000);
    let mut bits = 0u128;
    for (n, (t, p)) in out.iter().enumerate() {
        bits += 8 * p.wire_bytes() as u128;
        let want = (bits * NS_PER_S as u128).div_ceil(bps as u128) as u64;
        assert_eq!(*t, want, "packet {n}");
    }
}

#[test]
fn schedule_with_zero_gap_delivers_its_integral() {
    let cap = Capacity::Schedule {
        points: vec![(0, 10_000_000), (2 * NS_PER_S, 0), (3 * NS_PER_S, 20_000_000)],
        period: None,
    };
    let mut d = dir(cap, 0.0, QueueLimit::Packets(1000), &[]);
    let out = run_saturated(&mut d, 5 * NS_PER_S, 20, 1500);
    let in_0_2 = bits_departed(&out, 0, 0, 2 * NS_PER_S);
    let in_gap = bits_departed(&out, 0, 2 * NS_PER_S, 3 * NS_PER_S);
    let in_3_5 = bits_departed(&out, 0, 3 * NS_PER_S, 5 * NS_PER_S + 1);
    assert!((in_0_2 - 20e6).abs() <= 12_000.0, "{in_0_2}");
    assert_eq!(in_gap, 0.0, "nothing leaves while the rate is 0");
    assert!((in_3_5 - 40e6).abs() <= 12_000.0, "{in_3_5}");
    assert_eq!(d.rate_bps_at(2_500_000_000), 0.0);
    assert_eq!(d.rate_bps_at(3 * NS_PER_S), 20e6);
    assert_eq!(d.mean_rate_bps(0, 5 * NS_PER_S), 12e6);
}

/// A transmission spanning rate changes finishes when its bits are done: 12000 bits,
/// 6000 at 12 Mbit/s in [0, 0.5 ms), none in [0.5, 1 ms), 6000 at 24 Mbit/s → 1.25 ms.
#[test]
fn transmission_spanning_rate_changes_integrates_exactly() {
    let cap = Capacity::Schedule {
        points: vec![(0, 12_000_000), (500 * NS_PER_US, 0), (NS_PER_MS, 24_000_000)],
        period: None,
    };
    let mut d = dir(cap, 0.0, QueueLimit::Packets(10), &[]);
    d.enqueue(0, pkt(0, 1500)).unwrap();
    assert_eq!(d.next_wakeup(), Some(1_250_000));
    // A schedule ending at rate 0 never finishes and never asks to be woken.
    let cap = Capacity::Schedule {
        points: vec![(0, 12_000_000), (500 * NS_PER_US, 0)],
        period: None,
    };
    let mut d = dir(cap, 0.0, QueueLimit::Packets(10), &[]);
    d.enqueue(0, pkt(0, 1500)).unwrap();
    assert_eq!(d.next_wakeup(), None);
    let mut out = Vec::new();
    d.wake(100 * NS_PER_S, &mut out);
    assert!(out.is_empty() && d.queue_packets() == 1);
}

#[test]
fn per_second_trace_delivers_its_rates_and_wraps() {
    // Seconds: 8, (missing), (missing), 16 Mbit/s; period 4 s.
    let text = "1 8\r\n4 16\r\n";
    for (missing, per_s) in [
        (MissingPolicy::Zero, [8.0, 0.0, 0.0, 16.0]),
        (MissingPolicy::Hold, [8.0, 8.0, 8.0, 16.0]),
    ] {
        let cap = trace::parse_mbps_per_second(text, missing).unwrap();
        let mut d = dir(cap, 0.0, QueueLimit::Packets(1000), &[]);
        let out = run_saturated(&mut d, 8 * NS_PER_S, 20, 1500);
        for s in 0..8u64 {
            let got = bits_departed(&out, 0, s * NS_PER_S, (s + 1) * NS_PER_S) / 1e6;
            let want = per_s[(s % 4) as usize];
            assert!(
                (got - want).abs() <= 0.0121,
                "{missing:?} second {s}: {got} Mbit vs {want}"
            );
            assert_eq!(d.rate_bps_at(s * NS_PER_S + 1), want * 1e6);
        }
        check_invariants(&d);
    }
}

#[test]
fn mahimahi_trace_delivers_one_packet_per_opportunity() {
    // Opportunities at 1, 1, 3, 4 ms, then +4 ms per cycle.
    let cap = trace::parse_mahimahi("1\n1\n3\n4\n").unwrap();
    let mut d = dir(cap.clone(), 0.0, QueueLimit::Packets(100), &[]);
    let out = run_saturated(&mut d, 40 * NS_PER_MS, 10, 1500);
    let times: Vec<Time> = out.iter().map(|o| o.0 / NS_PER_MS).collect();
    let want: Vec<Time> = (0..10).flat_map(|k| [1, 1, 3, 4].map(|x| 4 * k + x)).collect();
    assert_eq!(times, want);
    // 4 × 1500 bytes per 4 ms = 12 Mbit/s.
    // (The first second holds 999 opportunities: the 1000th is at exactly 1 s.)
    assert_eq!(d.rate_bps_at(NS_PER_S / 2), 999.0 * 12_000.0);
    assert_eq!(d.rate_bps_at(3 * NS_PER_S / 2), 12e6);
    // 750-byte packets: two per opportunity; 3000-byte ones: one per two opportunities.
    let mut d = dir(cap.clone(), 0.0, QueueLimit::Packets(100), &[]);
    let out = run_saturated(&mut d, 8 * NS_PER_MS, 10, 750);
    let times: Vec<Time> = out.iter().map(|o| o.0 / NS_PER_MS).collect();
    assert_eq!(times, vec![1, 1, 1, 1, 3, 3, 4, 4, 5, 5, 5, 5, 7, 7, 8, 8]);
    let mut d = dir(cap.clone(), 0.0, QueueLimit::Packets(100), &[]);
    let out = run_saturated(&mut d, 8 * NS_PER_MS, 10, 3000);
    let times: Vec<Time> = out.iter().map(|o| o.0 / NS_PER_MS).collect();
    assert_eq!(times, vec![1, 4, 5, 8]);
}

/// Leftover credit goes to a packet that was queued by the opportunity; otherwise it is
/// lost, and opportunities that pass with an empty queue are burned (as in mahimahi).
#[test]
fn mahimahi_leftover_credit_rules() {
    let cap = trace::parse_mahimahi("1\n1\n3\n4\n").unwrap();
    let mut d = dir(cap, 0.0, QueueLimit::Packets(100), &[]);
    let ms = NS_PER_MS;
    let arrivals = vec![
        (0, pkt(0, 750)),                 // opp at 1 ms, 750 left over
        (ms / 2, pkt(1, 750)),            // queued before 1 ms: uses the leftover → 1 ms
        (ms + ms / 5, pkt(2, 750)),       // after 1 ms: both 1-ms opportunities are gone → 3 ms
        (3 * ms, pkt(3, 750)),            // arrives exactly at 3 ms: uses its leftover → 3 ms
        (20 * ms, pkt(4, 1500)),          // arrives exactly at an opportunity (cycle 4's last, 20 ms)
        (21 * ms + ms / 2, pkt(5, 1500)), // 21.5 ms: both 21-ms opportunities passed → 23 ms
    ];
    let out = drive(&mut d, &arrivals, NEVER - 1);
    let got: Vec<(u64, Time)> = out.iter().map(|(t, p)| (p.id, *t)).collect();
    assert_eq!(
        got,
        vec![(0, ms), (1, ms), (2, 3 * ms), (3, 3 * ms), (4, 20 * ms), (5, 23 * ms)]
    );
}

#[test]
fn drop_tail_counts_packets_and_bytes() {
    let mut d = dir(mbps(1.0), 0.0, QueueLimit::Packets(5), &[]);
    let results: Vec<bool> = (0..10).map(|i| d.enqueue(0, pkt(i, 1500)).is_ok()).collect();
    assert_eq!(
        results,
        [true, true, true, true, true, false, false, false, false, false]
    );
    let s = d.stats();
    assert_eq!(
        (s.enqueued_packets, s.drops_queue, s.queue_packets, s.max_queue_packets),
        (5, 5, 5, 5)
    );
    assert_eq!(s.queue_bytes, 7500);
    // The packet in transmission counts: after one departure there is room for one more.
    let mut out = Vec::new();
    d.wake(12 * NS_PER_MS, &mut out);
    assert_eq!(out.len(), 1);
    assert!(d.enqueue(12 * NS_PER_MS, pkt(10, 1500)).is_ok());
    assert!(d.enqueue(12 * NS_PER_MS, pkt(11, 1500)).is_err());
    check_invariants(&d);

    let mut d = dir(mbps(1.0), 0.0, QueueLimit::Bytes(4000), &[]);
    assert!(d.enqueue(0, pkt(0, 1500)).is_ok());
    assert!(d.enqueue(0, pkt(1, 1500)).is_ok());
    assert!(d.enqueue(0, pkt(2, 1500)).is_err(), "4500 > 4000 bytes");
    assert!(d.enqueue(0, pkt(3, 1000)).is_ok(), "a smaller packet still fits");
    assert_eq!(
        (d.queue_bytes(), d.stats().drops_queue, d.stats().max_queue_bytes),
        (4000, 1, 4000)
    );
    check_invariants(&d);
}

/// Bernoulli loss: the number lost out of n is Binomial(n, p); check it falls in the
/// central 99.9 % interval (normal approximation, z = 3.29).
#[test]
fn bernoulli_loss_fraction_is_binomial() {
    for (p, seed) in [(0.01, "a"), (0.1, "b"), (0.5, "c")] {
        let mut d = dir_with(
            mbps(1000.0),
            0.0,
            QueueLimit::Packets(1_000_000),
            &[],
            Some(LossConfig::Bernoulli { p }),
            None,
            rng(seed),
        );
        let n = 100_000u64;
        for i in 0..n {
            d.enqueue(0, pkt(i, 1500)).unwrap();
        }
        let mut out = Vec::new();
        d.wake(NEVER - 1, &mut out);
        let lost = d.stats().drops_loss as f64;
        let (mean, sd) = (n as f64 * p, (n as f64 * p * (1.0 - p)).sqrt());
        assert!(
            (lost - mean).abs() <= 3.29 * sd,
            "p = {p}: lost {lost}, expected {mean} ± {}",
            3.29 * sd
        );
        assert_eq!(out.len() as u64 + d.stats().drops_loss, n);
        check_invariants(&d);
    }
}

#[test]
fn gilbert_elliott_deterministic_losses_only_in_bad_periods() {
    let ge = LossConfig::GilbertElliott {
        p_good: 0.0,
        p_bad: 1.0,
        start: GeState::Good,
        good: SojournConfig::Deterministic { mean_s: 10.0 },
        bad: SojournConfig::Deterministic { mean_s: 4.0 },
    };
    // 12 Mbit/s: one 1500-byte packet per ms, departures at k ms.
    let mut d = dir_with(
        mbps(12.0),
        0.0,
        QueueLimit::Packets(100),
        &[],
        Some(ge),
        None,
        rng("ge"),
    );
    let end = 60 * NS_PER_S;
    let out = run_saturated(&mut d, end, 10, 1500);
    let bad = |t: Time| {
        let s = t as f64 / 1e9;
        (s % 14.0) >= 10.0 // bad in [10,14), [24,28), [38,42), [52,56)
    };
    for (t, _) in &out {
        assert!(!bad(*t), "delivered at {t} ns, inside a bad period");
    }
    let departed = d.stats().departed_packets;
    let expected_lost = (1..=departed).filter(|k| bad(k * NS_PER_MS)).count() as u64;
    assert_eq!(d.stats().drops_loss, expected_lost);
    assert_eq!(expected_lost, 4 * 4000, "4 bad periods of 4 s at 1000 packets/s");
    // The channel state itself, probed at period edges.
    let mut d = dir_with(
        mbps(1.0),
        0.0,
        QueueLimit::Packets(1),
        &[],
        Some(d_ge()),
        None,
        rng("x"),
    );
    let probe: Vec<bool> = [0.0, 9.999, 10.0, 13.999, 14.0, 23.9, 24.0, 28.0]
        .iter()
        .map(|&s| d.loss_state_bad_at(crate::core::time::from_secs_f64(s)))
        .collect();
    assert_eq!(probe, [false, false, true, true, false, false, true, false]);
}

fn d_ge() -> LossConfig {
    LossConfig::GilbertElliott {
        p_good: 0.0,
        p_bad: 1.0,
        start: GeState::Good,
        good: SojournConfig::Deterministic { mean_s: 10.0 },
        bad: SojournConfig::Deterministic { mean_s: 4.0 },
    }
}

/// Sojourn times measured from the state process (sampled every 1 ms) have the
/// configured means (exponential) and bounds (uniform).
#[test]
fn gilbert_elliott_sojourn_distributions() {
    let ge = |good, bad, start| LossConfig::GilbertElliott {
        p_good: 0.0,
        p_bad: 1.0,
        start,
        good,
        bad,
    };
    let measure = |cfg: LossConfig, seconds: u64| -> (Vec<f64>, Vec<f64>) {
        let mut d = dir_with(mbps(1.0), 0.0, QueueLimit::Packets(1), &[], Some(cfg), None, rng("soj"));
        let (mut goods, mut bads) = (Vec::new(), Vec::new());
        let mut state = d.loss_state_bad_at(0);
        let mut since = 0u64;
        for ms in 1..seconds * 1000 {
            let s = d.loss_state_bad_at(ms * NS_PER_MS);
            if s != state {
                // The unfinished last sojourn is never pushed (it is censored).
                let len = (ms - since) as f64 / 1000.0;
                if state {
                    bads.push(len)
                } else {
                    goods.push(len)
                }
                state = s;
                since = ms;
            }
        }
        (goods, bads)
    };
    let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len() as f64;
    let (g, b) = measure(
        ge(
            SojournConfig::Exponential { mean_s: 1.0 },
            SojournConfig::Exponential { mean_s: 0.5 },
            GeState::Bad,
        ),
        3000,
    );
    // ~2000 sojourns each: the standard error of the mean is ~2.2 % (good) / 2.2 % (bad).
    assert!(g.len() > 1500 && b.len() > 1500, "{} {}", g.len(), b.len());
    assert!((mean(&g) - 1.0).abs() < 0.08, "good mean {}", mean(&g));
    assert!((mean(&b) - 0.5).abs() < 0.04, "bad mean {}", mean(&b));
    let (g, b) = measure(
        ge(
            SojournConfig::Uniform { min_s: 0.2, max_s: 0.6 },
            SojournConfig::Deterministic { mean_s: 0.1 },
            GeState::Good,
        ),
        300,
    );
    assert!(
        g.iter().all(|&x| (0.199..=0.601).contains(&x)),
        "uniform sojourn out of [0.2, 0.6]"
    );
    assert!((mean(&g) - 0.4).abs() < 0.02, "uniform mean {}", mean(&g));
    assert!(b.iter().all(|&x| (x - 0.1).abs() < 0.0015));
}

fn outage(start_s: f64, dur_s: f64, queued: OutageQueued) -> Outage {
    use crate::core::time::from_secs_f64;
    Outage {
        start: from_secs_f64(start_s),
        end: from_secs_f64(start_s + dur_s),
        queued,
    }
}

/// 12 Mbit/s (1 ms per packet), a packet every 0.5 ms (2× overload), queue 100, outage
/// [1.0005 s, 2 s): the packet in flight at the start is half sent.
#[test]
fn outage_hold_vs_drop() {
    let arrivals: Vec<(Time, Packet)> = (0..6000).map(|i| (i * 500 * NS_PER_US, pkt(i, 1500))).collect();
    let o_start = 1_000_500_000;
    let o_end = 2 * NS_PER_S;

    let mut d = dir(
        mbps(12.0),
        0.0,
        QueueLimit::Packets(100),
        &[outage(1.0005, 0.9995, OutageQueued::Hold)],
    );
    let out = drive(&mut d, &arrivals, 3 * NS_PER_S);
    assert!(
        out.iter().all(|(t, _)| !(o_start < *t && *t < o_end)),
        "nothing leaves during the outage"
    );
    let first_after = out.iter().map(|o| o.0).find(|&t| t >= o_end).unwrap();
    assert_eq!(
        first_after,
        o_end + 500 * NS_PER_US,
        "the half-sent packet resumes where it stopped"
    );
    assert_eq!(d.stats().drops_outage, 0);
    assert_eq!(d.rate_bps_at(o_start), 0.0);
    assert_eq!(d.rate_bps_at(o_end), 12e6);
    check_invariants(&d);
    let held = d.stats().clone();

    let mut d = dir(
        mbps(12.0),
        0.0,
        QueueLimit::Packets(100),
        &[outage(1.0005, 0.9995, OutageQueued::Drop)],
    );
    let out = drive(&mut d, &arrivals, 3 * NS_PER_S);
    assert!(out.iter().all(|(t, _)| !(o_start < *t && *t < o_end)));
    // Flushed: the 100 queued packets; refused: arrivals at 1.001, 1.0015, ..., 1.9995 s.
    assert_eq!(d.stats().drops_outage, 100 + 1999);
    // The first arrival after the outage (at 2 s) finds an empty link: leaves at 2.001 s.
    let first_after = out.iter().find(|o| o.0 >= o_end).unwrap();
    assert_eq!((first_after.0, first_after.1.id), (o_end + NS_PER_MS, 4000));
    assert!(held.delivered_packets > 0 && d.stats().drops_queue < held.drops_queue);
    check_invariants(&d);
}

fn fwd(start_ms: u64, end_ms: u64, extra_ms: u64, loss_prob: f64) -> Forwarding {
    Forwarding {
        start: start_ms * NS_PER_MS,
        end: end_ms * NS_PER_MS,
        extra_delay: extra_ms * NS_PER_MS,
        loss_prob,
        queued_loss: 0.0,
        buffer_bytes: u64::MAX,
    }
}

fn hold(start_ms: u64, end_ms: u64) -> Outage {
    Outage {
        start: start_ms * NS_PER_MS,
        end: end_ms * NS_PER_MS,
        queued: OutageQueued::Hold,
    }
}

/// X2 forwarding at a handover (radio/effect.rs semantics): a saturated 25 Mbit/s downlink with
/// a 40 ms interruption and 10 ms forwarding delay delivers nothing between the last packet
/// before the detach and `end + 10 ms + one transmission`: the 50 ms IP-level gap.
#[test]
fn forwarding_holds_packets_until_end_plus_extra_delay() {
    let mut d = dir(mbps(25.0), 20.0, QueueLimit::Packets(100), &[hold(1000, 1040)]);
    d.set_forwarding(&[fwd(1000, 1040, 10, 0.0)]);
    let out = run_saturated(&mut d, 2 * NS_PER_S, 50, 1500);
    let dep: Vec<Time> = out.iter().map(|o| o.0 - 20 * NS_PER_MS).collect();
    let before = *dep.iter().rfind(|&&t| t <= NS_PER_S).unwrap();
    let after = *dep.iter().find(|&&t| t > NS_PER_S).unwrap();
    let tx = 1500 * 8 * NS_PER_S / 25_000_000; // 480 µs
    assert_eq!(
        after,
        1050 * NS_PER_MS + tx,
        "first forwarded packet goes out a full transmission after end + 10 ms"
    );
    assert!(NS_PER_S - before <= tx, "the link was busy until the detach: {before}");
    let g = d.forwarding_gaps()[0];
    assert_eq!(
        (g.start, g.last_before, g.first_after),
        (NS_PER_S, Some(before), Some(after))
    );
    let gap_ms = (after - before) as f64 / 1e6;
    assert!((50.0..=51.0).contains(&gap_ms), "{gap_ms}");
    // Everything that was queued at the detach was forwarded, in order, none lost.
    assert!(d.stats().forwarded >= 49, "{:?}", d.stats());
    assert_eq!(d.stats().drops_forwarding, 0);
    assert!(out.windows(2).all(|w| w[0].1.id < w[1].1.id), "FIFO");
    check_invariants(&d);
}

/// A packet partly sent at the detach is sent again in full by the target; with an empty
/// source queue nothing is forwarded and a packet arriving after the end goes out at once.
#[test]
fn forwarding_restarts_partly_sent_packets_and_skips_empty_queues() {
    // 12 Mbit/s: 1 ms per 1500-byte packet; the packet arriving at 999.5 ms is half sent at 1 s.
    let arrivals = vec![(999_500_000, pkt(0, 1500))];
    let mut d = dir(mbps(12.0), 0.0, QueueLimit::Packets(10), &[hold(1000, 1040)]);
    d.set_forwarding(&[fwd(1000, 1040, 10, 0.0)]);
    let out = drive(&mut d, &arrivals, 2 * NS_PER_S);
    assert_eq!(out.iter().map(|o| o.0).collect::<Vec<_>>(), vec![1051 * NS_PER_MS]);
    assert_eq!(d.stats().forwarded, 1);
    // Empty at the detach, nothing arrives during the interruption: a packet arriving at
    // 1045 ms (after the end, before end + extra) is not held.
    let arrivals = vec![(990 * NS_PER_MS, pkt(0, 1500)), (1045 * NS_PER_MS, pkt(1, 1500))];
    let mut d = dir(mbps(12.0), 0.0, QueueLimit::Packets(10), &[hold(1000, 1040)]);
    d.set_forwarding(&[fwd(1000, 1040, 10, 0.0)]);
    let out = drive(&mut d, &arrivals, 2 * NS_PER_S);
    assert_eq!(
        out.iter().map(|o| o.0).collect::<Vec<_>>(),
        vec![991 * NS_PER_MS, 1046 * NS_PER_MS]
    );
    assert_eq!(d.stats().forwarded, 0);
    // One arriving during the interruption is held, and the fresh one waits behind it.
    let arrivals = vec![(1020 * NS_PER_MS, pkt(0, 1500)), (1045 * NS_PER_MS, pkt(1, 1500))];
    let mut d = dir(mbps(12.0), 0.0, QueueLimit::Packets(10), &[hold(1000, 1040)]);
    d.set_forwarding(&[fwd(1000, 1040, 10, 0.0)]);
    let out = drive(&mut d, &arrivals, 2 * NS_PER_S);
    assert_eq!(
        out.iter().map(|o| o.0).collect::<Vec<_>>(),
        vec![1051 * NS_PER_MS, 1052 * NS_PER_MS]
    );
    assert_eq!(d.stats().forwarded, 1);
    check_invariants(&d);
}

/// Forwarding loss drops about the configured fraction of forwarded packets (binomial bounds),
/// never a packet that was not forwarded, and the same seed drops the same packets.
#[test]
fn forwarding_loss_drops_the_configured_fraction() {
    let p = 0.2;
    let spikes: Vec<Forwarding> = (0..200)
        .map(|k| Forwarding {
            queued_loss: p,
            ..fwd(100 + k * 100, 140 + k * 100, 10, p)
        })
        .collect();
    let outs: Vec<Outage> = spikes
        .iter()
        .map(|f| Outage {
            start: f.start,
            end: f.end,
            queued: OutageQueued::Hold,
        })
        .collect();
    let run = |seed: &str| {
        let mut d = dir_with(mbps(25.0), 0.0, QueueLimit::Packets(100), &outs, None, None, rng(seed));
        d.set_forwarding(&spikes);
        let out = run_saturated(&mut d, 21 * NS_PER_S, 30, 1500);
        check_invariants(&d);
        (d.stats().clone(), out.iter().map(|o| o.1.id).collect::<Vec<_>>())
    };
    let (st, ids) = run("a");
    let n = st.forwarded as f64;
    assert!(n > 4000.0, "{st:?}");
    let sd = (n * p * (1.0 - p)).sqrt();
    assert!(
        (st.drops_forwarding as f64 - n * p).abs() < 4.0 * sd,
        "{} of {n} lost",
        st.drops_forwarding
    );
    assert_eq!(st.drops_loss, 0);
    assert_eq!(run("a").1, ids, "same seed, same drops");
    assert_ne!(run("b").1, ids);
}

/// `queued_loss = 1` (ns-3's LENA: the source's buffer is not forwarded): everything queued at
/// the detach is lost, arrivals during the interruption are forwarded and go out at end + extra.
#[test]
fn discarded_source_buffer_loses_queued_packets_and_forwards_new_arrivals() {
    // 12 Mbit/s (1 ms per packet): 5 packets arrive at 998 ms, two during the interruption.
    let mut arrivals: Vec<(Time, Packet)> = (0..5).map(|i| (998 * NS_PER_MS, pkt(i, 1500))).collect();
    arrivals.push((1010 * NS_PER_MS, pkt(5, 1500)));
    arrivals.push((1030 * NS_PER_MS, pkt(6, 1500)));
    arrivals.push((1080 * NS_PER_MS, pkt(7, 1500)));
    let mut d = dir(mbps(12.0), 0.0, QueueLimit::Packets(10), &[hold(1000, 1040)]);
    d.set_forwarding(&[Forwarding {
        queued_loss: 1.0,
        ..fwd(1000, 1040, 10, 0.0)
    }]);
    let out = drive(&mut d, &arrivals, 2 * NS_PER_S);
    let got: Vec<(u64, Time)> = out.iter().map(|o| (o.1.id, o.0 / NS_PER_MS)).collect();
    // Packets 0 and 1 left by the detach (1 exactly at it); 2 was being sent: lost with 3 and 4.
    assert_eq!(got, vec![(0, 999), (1, 1000), (5, 1051), (6, 1052), (7, 1081)]);
    assert_eq!((d.stats().forwarded, d.stats().drops_forwarding), (5, 3));
    check_invariants(&d);
}

/// The target's buffer (`buffer_bytes`, ns-3's RLC `MaxTxBufferSize`) takes the forwarded
/// packets in arrival order up to its size; the rest of the burst is lost, and packets arriving
/// after the UE is back are not forwarded and not counted against it.
#[test]
fn forwarded_burst_beyond_the_target_buffer_is_lost() {
    let mut arrivals: Vec<(Time, Packet)> = (0..6).map(|i| (1010 * NS_PER_MS + i, pkt(i, 1500))).collect();
    arrivals.push((1080 * NS_PER_MS, pkt(6, 1500)));
    let mut d = dir(mbps(12.0), 0.0, QueueLimit::Packets(10), &[hold(1000, 1040)]);
    d.set_forwarding(&[Forwarding {
        buffer_bytes: 4000,
        ..fwd(1000, 1040, 10, 0.0)
    }]);
    let out = drive(&mut d, &arrivals, 2 * NS_PER_S);
    let got: Vec<u64> = out.iter().map(|o| o.1.id).collect();
    assert_eq!(got, vec![0, 1, 6], "two 1500 B packets fit in 4000 B");
    assert_eq!((d.stats().forwarded, d.stats().drops_forwarding), (6, 4));
    check_invariants(&d);
}

/// Outages apply to trace-driven links too: mahimahi opportunities inside are lost.
#[test]
fn outage_skips_mahimahi_opportunities() {
    let cap = trace::parse_mahimahi("1\n2\n3\n4\n").unwrap(); // one per ms
    let o = Outage {
        start: 10 * NS_PER_MS,
        end: 20 * NS_PER_MS,
        queued: OutageQueued::Hold,
    };
    let mut d = dir(cap.clone(), 0.0, QueueLimit::Packets(100), &[o]);
    let out = run_saturated(&mut d, 30 * NS_PER_MS, 5, 1500);
    let times: Vec<Time> = out.iter().map(|o| o.0 / NS_PER_MS).collect();
    let want: Vec<Time> = (1..=30).filter(|t| !(10..20).contains(t)).collect();
    assert_eq!(times, want);
    // Drop mode: the flush gives back the opportunities charged to the flushed packet.
    let o = Outage {
        start: 10 * NS_PER_MS + 1,
        end: 20 * NS_PER_MS,
        queued: OutageQueued::Drop,
    };
    let mut d = dir(cap, 0.0, QueueLimit::Packets(100), &[o]);
    let arrivals = vec![(10 * NS_PER_MS, pkt(0, 3000)), (20 * NS_PER_MS, pkt(1, 1500))];
    let out = drive(&mut d, &arrivals, NEVER - 1);
    assert_eq!(
        out.iter().map(|o| (o.1.id, o.0)).collect::<Vec<_>>(),
        vec![(1, 20 * NS_PER_MS)]
    );
    assert_eq!(d.stats().drops_outage, 1);
}

#[test]
fn reorder_lets_later_packets_overtake() {
    let p = 0.1;
    let mut d = dir_with(
        mbps(12.0),
        10.0,
        QueueLimit::Packets(100),
        &[],
        None,
        Some(ReorderConfig { p, extra_delay_ms: 5.0 }),
        rng("reorder"),
    );
    let out = run_saturated(&mut d, 10 * NS_PER_S, 10, 1500);
    let n = out.len() as f64;
    let delayed = out
        .iter()
        .filter(|(t, p)| *t == (p.id + 1) * NS_PER_MS + 15 * NS_PER_MS)
        .count() as f64;
    let plain = out
        .iter()
        .filter(|(t, p)| *t == (p.id + 1) * NS_PER_MS + 10 * NS_PER_MS)
        .count() as f64;
    assert_eq!(delayed + plain, n, "every packet gets delay or delay + extra");
    assert_eq!(delayed as u64, d.stats().reordered);
    let sd = (n * p * (1.0 - p)).sqrt();
    assert!((delayed - n * p).abs() <= 3.29 * sd, "{delayed} of {n}");
    // Sorted by arrival at the far end, ids are out of order somewhere.
    let mut by_arrival: Vec<(Time, u64)> = out.iter().map(|(t, p)| (*t, p.id)).collect();
    by_arrival.sort();
    let inversions = by_arrival.windows(2).filter(|w| w[1].1 < w[0].1).count();
    assert!(inversions > 0);
}

#[test]
fn same_seed_same_drops_and_streams_are_independent() {
    let lost_ids = |seed: &str, reorder: Option<ReorderConfig>| {
        let mut d = dir_with(
            mbps(100.0),
            0.0,
            QueueLimit::Packets(100_000),
            &[],
            Some(LossConfig::Bernoulli { p: 0.05 }),
            reorder,
            rng(seed),
        );
        for i in 0..20_000 {
            d.enqueue(0, pkt(i, 1500)).unwrap();
        }
        let mut out = Vec::new();
        d.wake(NEVER - 1, &mut out);
        let delivered: std::collections::HashSet<u64> = out.iter().map(|o| o.1.id).collect();
        (0..20_000).filter(|i| !delivered.contains(i)).collect::<Vec<u64>>()
    };
    let a = lost_ids("s1", None);
    assert_eq!(a, lost_ids("s1", None));
    assert_ne!(a, lost_ids("s2", None));
    // Reordering draws from its own named stream: enabling it changes no loss.
    assert_eq!(
        a,
        lost_ids(
            "s1",
            Some(ReorderConfig {
                p: 0.5,
                extra_delay_ms: 1.0
            })
        )
    );
}

/// Spurious and early wake calls change nothing.
#[test]
fn spurious_wakes_are_harmless() {
    let mk = || {
        dir_with(
            Capacity::Schedule {
                points: vec![(0, 5_000_000), (NS_PER_S, 0), (2 * NS_PER_S, 50_000_000)],
                period: None,
            },
            3.0,
            QueueLimit::Packets(50),
            &[outage(2.5, 0.2, OutageQueued::Drop)],
            Some(LossConfig::Bernoulli { p: 0.1 }),
            None,
            rng("spur"),
        )
    };
    let arrivals: Vec<(Time, Packet)> = (0..4000).map(|i| (i * NS_PER_MS, pkt(i, 1500))).collect();
    let mut clean = mk();
    let want = drive(&mut clean, &arrivals, 5 * NS_PER_S);
    let mut noisy = mk();
    let mut got = Vec::new();
    let mut i = 0;
    let mut now = 0;
    while now <= 5 * NS_PER_S {
        let ta = arrivals.get(i).map_or(NEVER, |a| a.0);
        let tw = noisy.next_wakeup().unwrap_or(NEVER);
        let t = ta.min(tw);
        if t > 5 * NS_PER_S {
            break;
        }
        // Extra calls at the current time and halfway to the next event.
        noisy.wake(now, &mut got);
        noisy.wake(now + (t - now) / 2, &mut got);
        now = t;
        if tw <= ta {
            noisy.wake(tw, &mut got);
            noisy.wake(tw, &mut got);
        } else {
            let _ = noisy.enqueue(ta, arrivals[i].1.clone());
            i += 1;
        }
    }
    let ids = |v: &[(Time, Packet)]| v.iter().map(|(t, p)| (*t, p.id)).collect::<Vec<_>>();
    assert_eq!(ids(&got), ids(&want));
    assert_eq!(noisy.stats(), clean.stats());
}

/// From TOML to two directions: reverse inherits capacity and delay, has no loss, and
/// gets its own randomness; outages hit both directions.
#[test]
fn config_builds_both_directions() {
    let c: LinkConfig = toml::from_str(
        r#"
        name = "l"
        delay_ms = 7
        rate_mbps = 12
        loss = { model = "bernoulli", p = 0.5 }
        outages = [ { start_s = 1, duration_s = 1 } ]
        "#,
    )
    .unwrap();
    let s = RngStreams::new(1);
    let (mut f, mut r) = c.build(Path::new("."), &s).unwrap();
    for d in [&mut f, &mut r] {
        d.enqueue(0, pkt(0, 1500)).unwrap();
        assert_eq!(d.next_wakeup(), Some(NS_PER_MS));
        assert_eq!(d.delay(), 7 * NS_PER_MS);
        assert_eq!(d.rate_bps_at(1_500_000_000), 0.0);
    }
    let (mut fo, mut ro) = (Vec::new(), Vec::new());
    for i in 1..2000 {
        f.enqueue(0, pkt(i, 1500)).ok();
        r.enqueue(0, pkt(i, 1500)).ok();
    }
    f.wake(NEVER - 1, &mut fo);
    r.wake(NEVER - 1, &mut ro);
    assert!(f.stats().drops_loss > 300);
    assert_eq!(r.stats().drops_loss, 0);
}

/// Not a correctness test: `cargo test --release -p mobipath-sim --lib link::tests::perf -- --ignored --nocapture`
#[test]
#[ignore]
fn perf_100mbps_60s() {
    for (name, cap) in [
        ("constant", mbps(100.0)),
        (
            "schedule",
            Capacity::Schedule {
                points: (0..60).map(|s| (s * NS_PER_S, 90_000_000 + s * 1_000_000)).collect(),
                period: None,
            },
        ),
    ] {
        let mut d = dir_with(
            cap,
            10.0,
            QueueLimit::Packets(1000),
            &[],
            Some(LossConfig::Bernoulli { p: 0.001 }),
            None,
            rng("p"),
        );
        let t0 = std::time::Instant::now();
        let out = run_saturated(&mut d, 60 * NS_PER_S, 2, 1500);
        let el = t0.elapsed();
        println!(
            "{name}: {} packets in {:?} ({:.0} ns/packet)",
            out.len(),
            el,
            el.as_nanos() as f64 / out.len() as f64
        );
    }
}

mod prop {
    use super::*;
    use proptest::prelude::*;

    fn capacity() -> impl Strategy<Value = Capacity> {
        prop_oneof![
            (1_000u64..2_000_000_000).prop_map(|bps| Capacity::Constant { bps }),
            (
                proptest::collection::vec((1u64..50_000_000, 0u64..3, 0u64..200_000_000), 1..6),
                any::<bool>()
            )
                .prop_map(|(steps, wrap)| {
                    // (gap, zero?, bps): a zero rate one time in three.
                    let mut t = 0;
                    let mut points = Vec::new();
                    for (gap, z, bps) in steps {
                        points.push((t, if z == 0 { 0 } else { bps.max(1) }));
                        t += gap;
                    }
                    if points.iter().all(|p| p.1 == 0) {
                        points[0].1 = 1_000_000;
                    }
                    Capacity::Schedule {
                        points,
                        period: wrap.then_some(t),
                    }
                }),
            proptest::collection::vec(0u64..20, 1..30).prop_map(|gaps| {
                let mut t = 0;
                let mut times: Vec<Time> = gaps
                    .iter()
                    .map(|g| {
                        t += g * NS_PER_MS / 4;
                        t
                    })
                    .collect();
                if *times.last().unwrap() == 0 {
                    times.push(NS_PER_MS);
                }
                let period = *times.last().unwrap();
                Capacity::Opportunities { times, period }
            }),
        ]
    }

    fn outages() -> impl Strategy<Value = Vec<Outage>> {
        proptest::collection::vec((0u64..100_000_000, 1u64..50_000_000, any::<bool>()), 0..4).prop_map(|v| {
            let mut t = 0;
            v.into_iter()
                .map(|(gap, len, drop)| {
                    let start = t + gap;
                    t = start + len;
                    Outage {
                        start,
                        end: t,
                        queued: if drop { OutageQueued::Drop } else { OutageQueued::Hold },
                    }
                })
                .collect()
        })
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(300))]
        /// Any capacity, outages, queue and traffic: no panic, every packet accounted for,
        /// FIFO order, departures never before arrival nor inside an outage.
        #[test]
        fn link_invariants_hold(
            cap in capacity(),
            outs in outages(),
            by_bytes in any::<bool>(),
            limit in 1u64..40,
            p in 0.0f64..0.5,
            gaps in proptest::collection::vec((0u64..3_000_000, 52u32..9000), 1..150),
            seed in any::<u64>(),
            extra in 0u64..20_000_000,
            fp in 0.0f64..0.5,
            qp in prop_oneof![Just(0.0), Just(1.0), 0.0f64..1.0],
        ) {
            let queue = if by_bytes { QueueLimit::Bytes(1500 * limit) } else { QueueLimit::Packets(limit) };
            let mut d = dir_with(cap, 1.0, queue, &outs, Some(LossConfig::Bernoulli { p }), None,
                DirStreams::named(&RngStreams::new(seed), "p"));
            // Hold outages forward their held packets `extra` later (drop outages cannot).
            let fws: Vec<Forwarding> = outs.iter().filter(|o| o.queued == OutageQueued::Hold)
                .map(|o| Forwarding { start: o.start, end: o.end, extra_delay: extra, loss_prob: fp, queued_loss: qp, buffer_bytes: u64::MAX }).collect();
            d.set_forwarding(&fws);
            let mut t = 0;
            let arrivals: Vec<(Time, Packet)> = gaps.iter().enumerate().map(|(i, &(g, b))| {
                t += g;
                (t, pkt(i as u64, b))
            }).collect();
            let out = drive(&mut d, &arrivals, 10 * NS_PER_S);
            check_invariants(&d);
            // Never more bits out than the capacity offered (all departures are <= 10 s).
            let offered = d.mean_rate_bps(0, 10 * NS_PER_S + 1) * (10.0 + 1e-9);
            prop_assert!(d.stats().departed_bytes as f64 * 8.0 <= offered + 1.0,
                "{} bits out, {offered} offered", d.stats().departed_bytes * 8);
            let delay = NS_PER_MS;
            let mut prev: Option<(Time, u64)> = None;
            for (ta, p) in &out {
                let dep = ta - delay;
                prop_assert!(dep >= arrivals[p.id as usize].0, "left before it arrived");
                prop_assert!(!outs.iter().any(|o| o.start < dep && dep < o.end), "left inside an outage");
                let arr = arrivals[p.id as usize].0;
                prop_assert!(!fws.iter().any(|f| arr < f.end && f.start < dep && dep < f.release()), "a held packet left before its release");
                if let Some((pd, pid)) = prev {
                    prop_assert!(dep >= pd && p.id > pid, "FIFO violated");
                }
                prev = Some((dep, p.id));
            }
        }
    }
}

/// Hand-built, unusable capacities never panic or hang: they just never send.
#[test]
fn degenerate_hand_built_capacities_are_safe() {
    for cap in [
        Capacity::Schedule {
            points: vec![],
            period: Some(5),
        },
        Capacity::Schedule {
            points: vec![(0, 0), (10, 0)],
            period: Some(20),
        },
        Capacity::Schedule {
            points: vec![(5, 0)],
            period: Some(0),
        },
        Capacity::Opportunities {
            times: vec![],
            period: 0,
        },
        Capacity::Opportunities {
            times: vec![0, 0],
            period: 0,
        },
        Capacity::Constant { bps: 0 },
    ] {
        let mut d = dir(cap.clone(), 0.0, QueueLimit::Packets(10), &[]);
        d.enqueue(0, pkt(0, 1500)).unwrap();
        assert_eq!(d.next_wakeup(), None, "{cap:?}");
        let mut out = Vec::new();
        d.wake(NEVER, &mut out);
        assert!(out.is_empty());
        assert_eq!(d.rate_bps_at(123), 0.0);
    }
    // Unsorted opportunity times are sorted, and the period taken from the last.
    let mut d = dir(
        Capacity::Opportunities {
            times: vec![3 * NS_PER_MS, NS_PER_MS],
            period: 7,
        },
        0.0,
        QueueLimit::Packets(10),
        &[],
    );
    d.enqueue(0, pkt(0, 1500)).unwrap();
    assert_eq!(d.next_wakeup(), Some(NS_PER_MS));
}

// ---- token bucket (tbf) ----

fn tb_dir(rate_mbps: f64, burst: u64, limit: u64, overhead: u64) -> LinkDir {
    let bps = (rate_mbps * 1e6) as u64;
    let spec = DirSpec {
        capacity: Capacity::Constant { bps },
        token_bucket: Some(TokenBucket {
            bps,
            burst_bytes: burst,
            overhead_bytes: overhead,
            limit_bytes: limit,
        }),
        delay: 5 * NS_PER_MS,
        queue: QueueLimit::Bytes(limit),
        loss: None,
        reorder: None,
    };
    LinkDir::new(&spec, &[], rng("tb"))
}

/// The bucket starts full: floor(burst / frame) frames leave at once, then one frame per
/// frame·8/rate; 1500-byte packets are 1514-byte frames, so a saturated bucket delivers
/// IP bytes at rate × 1500/1514 (and TCP payload at rate × 1448/1514).
#[test]
fn token_bucket_bursts_then_paces_frames_at_its_rate() {
    let mut d = tb_dir(10.0, 4 * 1514 + 100, 100 * 1514, 14);
    let mut out = Vec::new();
    for i in 0..10 {
        d.enqueue(0, pkt(i, 1500)).unwrap();
    }
    while let Some(t) = d.next_wakeup() {
        d.wake(t, &mut out);
    }
    let deps: Vec<Time> = out.iter().map(|(t, _)| t - 5 * NS_PER_MS).collect();
    assert_eq!(
        &deps[..4],
        &[0, 0, 0, 0],
        "a full bucket of 4 frames + 100 B sends 4 at once"
    );
    // The 5th needs 1414 more bytes of tokens: ⌈1414·8/10⁷ s⌉ = 1131.2 µs → 1131200 ns.
    assert_eq!(deps[4], 1_131_200);
    for w in deps[4..].windows(2) {
        assert!(
            (w[1] - w[0]).abs_diff(1_211_200) <= 1,
            "one 1514-byte frame per 1211.2 µs: {deps:?}"
        );
    }
    // Long run: delivered IP rate = 10 Mbit/s × 1500/1514.
    let mut d = tb_dir(10.0, 10 * 1514, 40 * 1514, 14);
    let got = run_saturated(&mut d, 10 * NS_PER_S, 20, 1500);
    let first = got.first().unwrap().0;
    let last = got.last().unwrap().0;
    let rate = (got.len() - 1) as f64 * 1500.0 * 8.0 / ((last - first) as f64 / 1e9);
    // The first 10 left together (the burst); measure over the paced ones.
    let paced = &got[10..];
    let r2 = (paced.len() - 1) as f64 * 1500.0 * 8.0 / ((paced.last().unwrap().0 - paced[0].0) as f64 / 1e9);
    assert!((r2 / (10e6 * 1500.0 / 1514.0) - 1.0).abs() < 1e-6, "paced IP rate {r2}");
    assert!(rate > r2, "the initial burst is faster than the rate");
}

/// tbf's bfifo: the limit counts frames (IP + overhead), including the head waiting for
/// tokens; an arrival that would exceed it is dropped; a frame larger than the bucket is
/// dropped at the input.
#[test]
fn token_bucket_limit_counts_frames_and_oversized_frames_are_dropped() {
    // Empty bucket after the first burst: burst = 1 frame, limit = 3 frames.
    let mut d = tb_dir(1.0, 1514, 3 * 1514, 14);
    assert!(d.enqueue(0, pkt(0, 1500)).is_ok());
    assert!(d.enqueue(0, pkt(1, 1500)).is_ok());
    assert!(d.enqueue(0, pkt(2, 1500)).is_ok());
    assert!(d.enqueue(0, pkt(3, 1500)).is_err(), "4 frames > 3-frame limit");
    // A packet that fits only if the overhead is ignored is refused.
    let mut d = tb_dir(1.0, 1514, 2 * 1514 + 100, 14);
    d.enqueue(0, pkt(0, 1500)).unwrap();
    d.enqueue(0, pkt(1, 1500)).unwrap();
    assert!(
        d.enqueue(0, pkt(2, 100)).is_err(),
        "1514+1514+114 > 3128: frames, not IP bytes, count"
    );
    let mut d = tb_dir(1.0, 1514, 2 * 1514 + 114, 14);
    d.enqueue(0, pkt(0, 1500)).unwrap();
    d.enqueue(0, pkt(1, 1500)).unwrap();
    assert!(d.enqueue(0, pkt(2, 100)).is_ok());
    assert_eq!(d.stats().drops_queue, 0);
    // A 1500-byte packet is a 1514-byte frame: it cannot fit a 1513-byte bucket.
    let mut d = tb_dir(1.0, 1513, 10_000, 14);
    assert!(d.enqueue(0, pkt(0, 1500)).is_err());
    assert!(d.enqueue(0, pkt(1, 1499)).is_ok());
}

/// After an idle period the bucket refills, but never beyond the burst.
#[test]
fn token_bucket_refills_up_to_the_burst_only() {
    let mut d = tb_dir(10.0, 2 * 1514, 100 * 1514, 14);
    let mut out = Vec::new();
    let drain = |d: &mut LinkDir, out: &mut Vec<(Time, Packet)>| {
        while let Some(t) = d.next_wakeup() {
            d.wake(t, out);
        }
    };
    for i in 0..2 {
        d.enqueue(0, pkt(i, 1500)).unwrap();
    }
    drain(&mut d, &mut out);
    // 1 s idle: 1.25 MB of tokens would accrue, the bucket keeps 2 frames.
    for i in 2..5 {
        d.enqueue(NS_PER_S, pkt(i, 1500)).unwrap();
    }
    drain(&mut d, &mut out);
    let deps: Vec<Time> = out.iter().map(|(t, _)| t - 5 * NS_PER_MS).collect();
    assert_eq!(&deps[..4], &[0, 0, NS_PER_S, NS_PER_S]);
    assert_eq!(deps[4], NS_PER_S + 1_211_200);
}
