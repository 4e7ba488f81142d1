//! MPTCP behaviour end to end: delivery guarantees, aggregation, coupled fairness, P1's shape
//! and MP_PRIO.
mod common;
use common::*;
use proptest::prelude::*;

/// Two paths ("a", "b") with their own links, one MPTCP flow over both.
fn two_paths(dur: f64, a: &str, b: &str, flow: &str) -> String {
    format!(
        r#"
seed = 1
duration_s = {dur}
[[links]]
name = "la"
{a}
[[links]]
name = "lb"
{b}
[[paths]]
name = "a"
links = ["la"]
[[paths]]
name = "b"
links = ["lb"]
[[flows]]
name = "mp"
paths = ["a", "b"]
{flow}
"#
    )
}

fn sub(o: &mobipath_sim::api::RunOutput, k: usize) -> &serde_json::Value {
    &flow(o, "mp")["subflows"][k]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, .. ProptestConfig::default() })]
    /// Exactly-once, in-order delivery at connection level under loss, reordering, outages and a
    /// path that dies for good mid-transfer.
    #[test]
    fn connection_delivers_exactly_once_in_order(
        seed in 0u64..10_000,
        loss in 0.0f64..0.04,
        reorder in 0.0f64..0.08,
        dies in any::<bool>(),
        sched in prop::sample::select(vec!["minrtt", "linux-default", "roundrobin", "redundant", "blest", "ecf", "peekaboo", "delay-predictive"]),
        cc in prop::sample::select(vec!["lia", "olia", "cubic", "reno"]),
        recovery in any::<bool>(),
        bytes in 1u64..4_000_000,
    ) {
        let a = format!("rate_mbps = 8\ndelay_ms = 10\nqueue_packets = 50\nloss = {{ model = \"bernoulli\", p = {loss} }}\nreorder = {{ p = {reorder}, extra_delay_ms = 6 }}");
        let mut b = "rate_mbps = 4\ndelay_ms = 30\nqueue_packets = 40\noutages = [ { start_s = 1, duration_s = 0.8, queued = \"hold\" } ]".to_string();
        if dies {
            b = "rate_mbps = 4\ndelay_ms = 30\nqueue_packets = 40\noutages = [ { start_s = 1.5, duration_s = 500, queued = \"drop\" } ]".to_string();
        }
        let fc = format!("cc = \"{cc}\"\nscheduler = \"{sched}\"\ntraffic = {{ kind = \"file\", bytes = {bytes} }}\nmptcp = {{ receiver_recovery = {recovery} }}");
        let o = run_seed(&two_paths(120.0, &a, &b, &fc), seed);
        let fl = flow(&o, "mp");
        prop_assert_eq!(f(&fl["delivery_errors"]), 0.0);
        prop_assert_eq!(f(&fl["bytes_delivered"]) as u64, bytes, "{}", fl);
        prop_assert!(fl["fct_s"].is_number(), "file did not complete: {}", fl);
    }
}

/// Two equal disjoint 25 Mbit/s paths with uncoupled CUBIC: aggregate ≥ 1.8× one path's TCP.
#[test]
fn two_equal_paths_aggregate() {
    let link = "rate_mbps = 25\ndelay_ms = 20\nqueue_packets = 100";
    let mp = run(&with_output(
        &two_paths(
            30.0,
            link,
            link,
            "cc = \"cubic\"\nscheduler = \"minrtt\"\ntraffic = { kind = \"bulk\" }",
        ),
        "warmup_s = 5",
    ));
    let tcp = run(&with_output(
        &single(30.0, 25.0, 20.0, 100, "", "cubic", "traffic = { kind = \"bulk\" }"),
        "warmup_s = 5",
    ));
    let g_mp = f(&flow(&mp, "mp")["goodput_mbps"]);
    let g_tcp = f(&flow(&tcp, "f")["goodput_mbps"]);
    assert!(g_mp >= 1.8 * g_tcp, "MPTCP {g_mp:.2} vs one path {g_tcp:.2}");
    for k in 0..2 {
        assert!(f(&sub(&mp, k)["goodput_mbps"]) > 0.8 * g_tcp, "subflow {k} underused");
    }
    // Subflow goodputs cover the same window as the flow's (after the warm-up), so they add up
    // to it, up to the bytes still in the connection-level reorder queue at the two ends.
    let sum: f64 = (0..2).map(|k| f(&sub(&mp, k)["goodput_mbps"])).sum();
    assert!((sum - g_mp).abs() <= 0.01 * g_mp, "subflows {sum:.3} vs flow {g_mp:.3}");
}

/// Two subflows sharing one bottleneck with one single-path TCP: coupled CC takes about one
/// TCP's share (±30 %), uncoupled Reno takes about two.
#[test]
fn coupled_congestion_control_is_fair_at_a_shared_bottleneck() {
    let scenario = |cc: &str| {
        format!(
            r#"
seed = 2
duration_s = 200
[output]
warmup_s = 20
[[links]]
name = "bottleneck"
rate_mbps = 30
delay_ms = 10
queue_packets = 100
[[links]]
name = "a1"
rate_mbps = 1000
delay_ms = 5
[[links]]
name = "a2"
rate_mbps = 1000
delay_ms = 5
[[links]]
name = "a3"
rate_mbps = 1000
delay_ms = 5
[[paths]]
name = "m1"
links = ["a1", "bottleneck"]
[[paths]]
name = "m2"
links = ["a2", "bottleneck"]
[[paths]]
name = "t"
links = ["a3", "bottleneck"]
[[flows]]
name = "mp"
paths = ["m1", "m2"]
cc = "{cc}"
traffic = {{ kind = "bulk" }}
[[flows]]
name = "tcp"
path = "t"
cc = "reno"
traffic = {{ kind = "bulk" }}
"#
        )
    };
    let ratio = |cc: &str| {
        let o = run(&scenario(cc));
        f(&flow(&o, "mp")["goodput_mbps"]) / f(&flow(&o, "tcp")["goodput_mbps"])
    };
    for cc in ["lia", "olia"] {
        let r = ratio(cc);
        assert!((0.7..=1.3).contains(&r), "{cc}: MPTCP/TCP = {r:.2}");
    }
    let r = ratio("reno");
    assert!(r >= 1.5, "uncoupled reno should take about two shares, got {r:.2}");
}

fn p1(path2_mbps: f64, path2_delay_ms: f64, path1_mbps: f64, flow: &str) -> String {
    two_paths(
        30.0,
        &format!("rate_mbps = {path1_mbps}\ndelay_ms = 3\nqueue_packets = 200"),
        &format!("rate_mbps = {path2_mbps}\ndelay_ms = {path2_delay_ms}\nqueue_packets = 100\nloss = {{ model = \"bernoulli\", p = 0.01 }}"),
        flow,
    )
}

/// P1, scenario 1: with a slow path 2 (1 and 2 Mbit/s, 15 ms, 1 % loss), minRTT MPTCP falls
/// below single-path TCP on path 1; delay-predictive narrows the gap and keeps fewer packets in
/// the receive buffer. Means over three seeds per rate. Measured at this commit (Mbit/s; MSS-sized
/// packets in the buffer): TCP 96.5; minRTT 92.3 / 93.8 (rbuf 125 / 104); delay-predictive
/// 92.9 / 95.0 (rbuf 30 / 35) at 1 / 2 Mbit/s (issue 20: a full slower path is no longer queued
/// on). The goodput gain is small; the buffer holds a quarter to a third.
#[test]
fn p1_delay_predictive_beats_minrtt_on_heterogeneous_paths() {
    let flow_cfg = |s: &str| {
        format!(
            "cc = \"reno\"\nscheduler = \"{s}\"\ntraffic = {{ kind = \"bulk\" }}\nmptcp = {{ rcv_buf_packets = 500 }}"
        )
    };
    let tcp = run(&single(
        30.0,
        100.0,
        3.0,
        200,
        "",
        "reno",
        "traffic = { kind = \"bulk\" }\nreceiver = { rcv_buf_bytes = 724000 }",
    ));
    let g_tcp = f(&flow(&tcp, "f")["goodput_mbps"]);
    // (mean goodput, mean receive-buffer occupancy in bytes) over path-2 rates and seeds.
    let measure = |sched: &str| {
        let (mut g, mut b, mut n) = (0.0, 0.0, 0.0);
        for rate in [1.0, 2.0] {
            let (mut gr, mut br) = (0.0, 0.0);
            for seed in 1..=3 {
                let o = run_seed(&p1(rate, 15.0, 100.0, &flow_cfg(sched)), seed);
                gr += f(&flow(&o, "mp")["goodput_mbps"]);
                br += f(&flow(&o, "mp")["rcvbuf_mean_bytes"]);
            }
            eprintln!(
                "{sched} at {rate} Mbit/s: {:.2} Mbit/s, {:.1} MSS-sized packets in the buffer",
                gr / 3.0,
                br / 3.0 / 1448.0
            );
            (g, b, n) = (g + gr, b + br, n + 3.0);
        }
        (g / n, b / n)
    };
    let (g_min, buf_min) = measure("minrtt");
    let (g_dp, buf_dp) = measure("delay-predictive");
    eprintln!("TCP {g_tcp:.2}, minRTT {g_min:.2} ({buf_min:.0} B), delay-predictive {g_dp:.2} ({buf_dp:.0} B)");
    assert!(
        g_min < g_tcp,
        "minRTT MPTCP {g_min:.2} should fall below TCP on path 1 {g_tcp:.2}"
    );
    assert!(g_dp > g_min, "delay-predictive {g_dp:.2} should beat minRTT {g_min:.2}");
    assert!(
        buf_dp < 0.6 * buf_min,
        "delay-predictive should hold less in the buffer: {buf_dp:.0} vs {buf_min:.0}"
    );
}

/// P1's delay-predictive scheduler on two equal-rate paths where path 2 is only a little slower
/// (5 ms vs 3 ms, 1 % loss on path 2): it must use both. Its first version, which waited for a
/// full path instead of queueing on it, starved path 1 here (13 Mbit/s of ~60): path 1 carried
/// lone packets, whose delayed ACKs inflated its RTT estimate, which kept it sparse.
#[test]
fn p1_delay_predictive_does_not_starve_the_faster_path() {
    let flow_cfg = "cc = \"reno\"\nscheduler = \"delay-predictive\"\ntraffic = { kind = \"bulk\" }\nmptcp = { rcv_buf_packets = 500 }";
    let o = run(&two_paths(
        30.0,
        "rate_mbps = 50\ndelay_ms = 3\nqueue_packets = 100",
        "rate_mbps = 50\ndelay_ms = 5\nqueue_packets = 100\nloss = { model = \"bernoulli\", p = 0.01 }",
        flow_cfg,
    ));
    let (g, g0) = (f(&flow(&o, "mp")["goodput_mbps"]), f(&sub(&o, 0)["goodput_mbps"]));
    assert!(g > 50.0, "delay-predictive should beat one path: {g:.1} Mbit/s");
    assert!(g0 > 40.0, "path 1 should run near its 50 Mbit/s: {g0:.1}");
}

/// P1, scenario 2 (Table 2 and §4.1): path 1 50 Mbit/s, 3 ms; path 2 50 Mbit/s with its one-way
/// delay swept, 1 % random loss on path 2 only ("to analyse losses on the worse path"); 1500-byte
/// packets, 500-packet receive buffer; Reno. Returns the mean loss-recovery times (ms) of the
/// segments first sent on path 2, from the original send and from detection —
/// `subflows[1].loss_recovery_*`, so that drop-tail losses on path 1, which any scheme repairs
/// within path 1's few-ms RTT, do not dilute them — pooled over `seeds` runs of 120 s, and the
/// number of such losses.
///
/// Both curves use `roundrobin`: the paper's "standard MPTCP" spreads data over the paths by
/// congestion window, as round robin over subflows with window room does. Two other choices
/// would not measure path-2 losses: `delay-predictive` sends almost nothing on path 2 beyond
/// ~100 ms (path 1's queue would have to outgrow the 500-packet window before a packet on path 2
/// is predicted to arrive first), and `minrtt` has Linux's
/// opportunistic retransmission, which itself re-sends the oldest data on path 1 whenever the
/// window blocks (the 2012 MPTCP the paper compared against had none).
fn p1_path2_recovery(path2_delay_ms: f64, receiver_recovery: bool, seeds: u64) -> P1Recovery {
    p1_path2_recovery_with(path2_delay_ms, receiver_recovery, seeds, "reno", 120.0)
}

/// [`p1_path2_recovery`] under congestion control `cc`, runs of `duration_s`.
fn p1_path2_recovery_with(
    path2_delay_ms: f64,
    receiver_recovery: bool,
    seeds: u64,
    cc: &str,
    duration_s: f64,
) -> P1Recovery {
    let flow_cfg = format!(
        "cc = \"{cc}\"\nscheduler = \"roundrobin\"\ntraffic = {{ kind = \"bulk\" }}\nmptcp = {{ rcv_buf_packets = 500, receiver_recovery = {receiver_recovery} }}"
    );
    let scenario = two_paths(
        duration_s,
        "rate_mbps = 50\ndelay_ms = 3\nqueue_packets = 100",
        &format!("rate_mbps = 50\ndelay_ms = {path2_delay_ms}\nqueue_packets = 100\nloss = {{ model = \"bernoulli\", p = 0.01 }}"),
        &flow_cfg,
    );
    let (mut sum_ms, mut sum_detect_ms, mut n, mut share) = (0.0, 0.0, 0u64, 0.0);
    for seed in 1..=seeds {
        let o = run_seed(&scenario, seed);
        let s = sub(&o, 1);
        let k = f(&s["loss_recovery_count"]) as u64;
        sum_ms += f(&s["loss_recovery_mean_ms"]) * k as f64;
        sum_detect_ms += f(&s["loss_recovery_from_detection_mean_ms"]) * k as f64;
        n += k;
        share += f(&s["goodput_mbps"]) / f(&flow(&o, "mp")["goodput_mbps"]) / seeds as f64;
    }
    let mean = |x: f64| if n > 0 { x / n as f64 } else { 0.0 };
    P1Recovery {
        from_send_ms: mean(sum_ms),
        from_detection_ms: mean(sum_detect_ms),
        losses: n,
        path2_share: share,
    }
}

/// Mean loss-recovery times (ms) of path-2 losses, pooled over seeds.
struct P1Recovery {
    /// From the original send (`loss_recovery_mean_ms`).
    from_send_ms: f64,
    /// From detection (`loss_recovery_from_detection_mean_ms`).
    from_detection_ms: f64,
    losses: u64,
    /// Share of the connection's goodput delivered over path 2 (mean over seeds).
    path2_share: f64,
}

/// Measurement sweep behind the thresholds of the P1 scenario-2 test (slow: run on demand with
/// `cargo test --release -p mobipath-sim --test mptcp_behaviour p1_sweep -- --ignored --nocapture`).
#[test]
#[ignore]
fn p1_sweep_recovery_times() {
    let seeds = std::env::var("P1_SEEDS").ok().and_then(|s| s.parse().ok()).unwrap_or(4);
    eprintln!("delay_ms | default: from send, from detection (n, path-2 share) | receiver-based: the same");
    for d in [1.0, 5.0, 25.0, 50.0, 100.0, 150.0] {
        let a = p1_path2_recovery(d, false, seeds);
        let b = p1_path2_recovery(d, true, seeds);
        eprintln!(
            "{d:>6} | {:>7.1} {:>7.1} ({:>3}, {:.2}) | {:>7.1} {:>7.1} ({:>3}, {:.2})",
            a.from_send_ms,
            a.from_detection_ms,
            a.losses,
            a.path2_share,
            b.from_send_ms,
            b.from_detection_ms,
            b.losses,
            b.path2_share
        );
    }
}

/// P1, scenario 2 (Fig. 10): with receiver-based recovery, the loss-recovery time of path-2
/// losses stays roughly flat as path-2 delay grows, while the default's grows with it — measured
/// from detection (the arrival of the next segment on path 2, which reveals the gap: the earliest
/// any receiver can know of the loss). From the original send no scheme can be flat: the gap
/// shows one path-2 one-way delay after the send.
///
/// Measured at this commit (4 seeds × 120 s; mean ms of path-2 losses, default / receiver-based;
/// `p1_sweep_recovery_times` prints the whole sweep, docs/p1.md has it):
///
/// | path-2 delay | from send     | from detection | path-2 losses |
/// |--------------|---------------|----------------|---------------|
/// | 5 ms         | 20.9 / 20.7   | 14.4 / 14.2    | 5235 / 5234   |
/// | 25 ms        | 92.8 / 58.9   | 62.8 / 28.9    | 1083 / 1079   |
/// | 150 ms       | 589.6 / 202.8 | 363.8 / 7.7    | 114 / 135     |
///
/// The default grows ≈ 2.5 path-2 one-way delays from detection (duplicate ACKs back over path
/// 2, the retransmission forward over it). Receiver-based recovery stays between ~6 and ~30 ms:
/// its time is set by path 1 (three segments beyond the hole, the request back over path 1, the
/// copy forward over it, through path 1's drop-tail queue, which Reno keeps up to 24 ms full
/// when path 2 is short and the window is not the limit), not by path 2.
#[test]
fn p1_receiver_recovery_time_stays_flat_as_path2_delay_grows() {
    let seeds = 4;
    let delays = [5.0, 25.0, 150.0];
    let default: Vec<P1Recovery> = delays.iter().map(|&d| p1_path2_recovery(d, false, seeds)).collect();
    let receiver: Vec<P1Recovery> = delays.iter().map(|&d| p1_path2_recovery(d, true, seeds)).collect();
    for (k, d) in delays.iter().enumerate() {
        eprintln!(
            "path-2 delay {d} ms: default {:.1} / {:.1} ms, receiver-based {:.1} / {:.1} ms (from send / from detection; {} / {} losses)",
            default[k].from_send_ms, default[k].from_detection_ms, receiver[k].from_send_ms, receiver[k].from_detection_ms, default[k].losses, receiver[k].losses
        );
        assert!(
            default[k].losses >= 60 && receiver[k].losses >= 60,
            "too few path-2 losses at {d} ms to compare"
        );
    }
    let (first, last) = (0, delays.len() - 1);
    let delay_growth = delays[last] - delays[first];
    // The default grows with path 2: the metric does respond to path-2 delay.
    let default_detect_growth = default[last].from_detection_ms - default[first].from_detection_ms;
    assert!(
        default_detect_growth > 1.5 * delay_growth,
        "default from detection should grow ~2.5 one-way delays: +{default_detect_growth:.1} ms"
    );
    // Receiver-based: flat from detection — every point within 25 ms of every other over a
    // 145 ms sweep, and the 150 ms point a small fraction of the default's.
    let det: Vec<f64> = receiver.iter().map(|r| r.from_detection_ms).collect();
    let spread = det.iter().cloned().fold(f64::MIN, f64::max) - det.iter().cloned().fold(f64::MAX, f64::min);
    assert!(
        spread < 25.0,
        "receiver-based recovery from detection is not flat: {det:?} ms"
    );
    assert!(
        det[last] < 0.1 * default[last].from_detection_ms,
        "receiver-based {:.1} ms vs default {:.1} ms at {} ms",
        det[last],
        default[last].from_detection_ms,
        delays[last]
    );
    // From the send, both must grow by at least the path-2 delay (the loss is invisible before);
    // the default by ~4 one-way delays, receiver-based by little more than one.
    let default_send_growth = default[last].from_send_ms - default[first].from_send_ms;
    let receiver_send_growth = receiver[last].from_send_ms - receiver[first].from_send_ms;
    assert!(
        default_send_growth > 2.5 * delay_growth,
        "default from send: +{default_send_growth:.1} ms"
    );
    assert!(
        receiver_send_growth > 0.9 * delay_growth && receiver_send_growth < 1.5 * delay_growth,
        "receiver-based from send should grow by about one path-2 delay: +{receiver_send_growth:.1} ms"
    );
}

/// Issue 20: the flatness claim where path 2 is really used. Under Reno (above) path 2 carries
/// 20 % of the data or more only up to ~5 ms (1 % loss caps it), so a flat curve there would be
/// measured on a nearly idle path. BBR does not back off on random loss: round robin keeps
/// 30-50 % on path 2 from 5 to 150 ms. Over the delays at which both schemes carry at least 20 %
/// (which must span at least 100 ms), receiver-based recovery's mean time from detection grows by
/// less than 0.25 × the default's. Measured at this commit (3 seeds × 30 s): default 13.8 → 324.5
/// ms, receiver-based 8.5 → 7.2 ms; path-2 shares 0.50 / 0.49 at 5 ms and 0.55 / 0.36 at 150 ms
/// (`reproduce p1` has the same with 10 seeds).
#[test]
fn p1_receiver_recovery_is_flat_where_path2_carries_a_fifth_of_the_data() {
    let delays = [5.0, 150.0];
    let default: Vec<P1Recovery> = delays
        .iter()
        .map(|&d| p1_path2_recovery_with(d, false, 3, "bbr", 30.0))
        .collect();
    let receiver: Vec<P1Recovery> = delays
        .iter()
        .map(|&d| p1_path2_recovery_with(d, true, 3, "bbr", 30.0))
        .collect();
    let used: Vec<usize> = (0..delays.len())
        .filter(|&k| default[k].path2_share >= 0.2 && receiver[k].path2_share >= 0.2)
        .collect();
    let shares: Vec<(f64, f64)> = default
        .iter()
        .zip(&receiver)
        .map(|(a, b)| (a.path2_share, b.path2_share))
        .collect();
    assert!(
        used.len() >= 2 && delays[*used.last().unwrap()] - delays[used[0]] >= 100.0,
        "path 2 carries >= 20 % at too few delays: {shares:?}"
    );
    let (lo, hi) = (used[0], *used.last().unwrap());
    for k in [lo, hi] {
        assert!(
            default[k].losses >= 30 && receiver[k].losses >= 30,
            "too few path-2 losses at {} ms",
            delays[k]
        );
    }
    let g_rec = receiver[hi].from_detection_ms - receiver[lo].from_detection_ms;
    let g_def = default[hi].from_detection_ms - default[lo].from_detection_ms;
    eprintln!(
        "BBR, path 2 >= 20 % at {:?} ms (shares {shares:?}): receiver-based {:.1} -> {:.1} ms, default {:.1} -> {:.1} ms",
        used.iter().map(|&k| delays[k]).collect::<Vec<_>>(),
        receiver[lo].from_detection_ms,
        receiver[hi].from_detection_ms,
        default[lo].from_detection_ms,
        default[hi].from_detection_ms
    );
    assert!(
        g_def > 100.0,
        "the default should grow with path 2's delay: +{g_def:.1} ms"
    );
    assert!(
        g_rec < 0.25 * g_def,
        "receiver-based grows {g_rec:.1} ms, not < 0.25 x the default's {g_def:.1} ms"
    );
}

/// MP_PRIO B=1 mid-transfer: within a few RTTs the subflow carries no new data while the other
/// is usable; B=0 brings it back.
#[test]
fn mp_prio_backup_moves_traffic_off_and_back() {
    let link = "rate_mbps = 20\ndelay_ms = 20\nqueue_packets = 100";
    let f_cfg = "cc = \"cubic\"\nscheduler = \"minrtt\"\ntraffic = { kind = \"bulk\" }\nmptcp = { mp_prio = [ { at_s = 10, subflow = 1, backup = true }, { at_s = 20, subflow = 1, backup = false } ] }";
    let o = run(&two_paths(30.0, link, link, f_cfg));
    let tput = series(&o, "subflow", "mp/b", "throughput_mbps");
    let mean = |lo: f64, hi: f64| {
        let v: Vec<f64> = tput.iter().filter(|(t, _)| *t >= lo && *t < hi).map(|x| x.1).collect();
        v.iter().sum::<f64>() / v.len() as f64
    };
    assert!(mean(5.0, 10.0) > 10.0, "subflow 1 carries data before MP_PRIO");
    assert!(
        mean(11.0, 20.0) < 0.5,
        "backup subflow still carries data: {:.2} Mbit/s",
        mean(11.0, 20.0)
    );
    assert!(
        mean(22.0, 30.0) > 10.0,
        "B=0 should bring it back: {:.2}",
        mean(22.0, 30.0)
    );
    assert_eq!(f(&flow(&o, "mp")["mp_prio_received"]), 2.0);
}

/// A joined subflow's first RTT sample is its MP_JOIN SYN/SYN-ACK exchange (Linux seeds srtt and
/// min_rtt there): a subflow that never carries data still knows its path's RTT.
#[test]
fn join_handshake_gives_the_first_rtt_sample() {
    let a = "rate_mbps = 10\ndelay_ms = 5\nqueue_packets = 100";
    let b = "rate_mbps = 10\ndelay_ms = 40\nqueue_packets = 100";
    // One segment, done before the second subflow could carry anything.
    let o = run(&two_paths(
        2.0,
        a,
        b,
        "cc = \"reno\"\nscheduler = \"minrtt\"\ntraffic = { kind = \"file\", bytes = 1000 }",
    ));
    let s1 = sub(&o, 1);
    assert_eq!(s1["established"], true, "{s1}");
    assert_eq!(f(&s1["segments_sent"]), 0.0, "{s1}");
    // 2 × 40 ms propagation plus the two 52-byte packets' serialisation at 10 Mbit/s (~0.08 ms).
    let rtt = f(&s1["mean_rtt_ms"]);
    assert!((80.0..81.0).contains(&rtt), "join RTT {rtt} ms");
}

/// docs/metrics.md, per-subflow goodput: counted when the data arrives at the receiver, so no
/// subflow's goodput can exceed its link's payload ceiling (rate × MSS / packet size), even when
/// data held behind a hole is released later (issue 18: 19.34 on a 19.13 Mbit/s path when it was
/// counted at release). Two 20 Mbit/s links with 1-BDP drop-tail queues (the fidelity grid's
/// MPTCP row: queue overflows leave holes at both levels), several seeds; the
/// window's edges may cut one packet.
#[test]
fn per_subflow_goodput_never_exceeds_the_link_ceiling() {
    let link = "rate_mbps = 20\ndelay_ms = 10\nqueue_packets = 34";
    let sc = with_output(
        &two_paths(
            20.0,
            link,
            link,
            "cc = \"cubic\"\nscheduler = \"linux-default\"\ntraffic = { kind = \"bulk\" }",
        ),
        "warmup_s = 3",
    );
    let window_s = 17.0;
    let ceiling = 20.0 * 1448.0 / 1500.0 + 1500.0 * 8.0 / window_s / 1e6;
    let mut near = 0;
    for seed in 1..=5 {
        let o = run_seed(&sc, seed);
        for k in 0..2 {
            let g = f(&sub(&o, k)["goodput_mbps"]);
            assert!(
                g <= ceiling,
                "seed {seed} subflow {k}: goodput {g} above the ceiling {ceiling}"
            );
            near += usize::from(g > 0.9 * 20.0 * 1448.0 / 1500.0);
        }
        // The subflows carry the flow's data between them (they may differ from the flow's
        // in-order goodput by what is held out of order at the window's edges).
        let total = f(&sub(&o, 0)["goodput_mbps"]) + f(&sub(&o, 1)["goodput_mbps"]);
        let fg = f(&flow(&o, "mp")["goodput_mbps"]);
        assert!(
            (total - fg).abs() <= 0.01 * fg,
            "seed {seed}: subflows {total} vs flow {fg}"
        );
    }
    assert!(
        near > 0,
        "no subflow came near its ceiling: the test would not catch an overcount"
    );
}
