//! P1's worked examples (Fig. 5: the delay-predictive assignment; Fig. 6: receiver-based
//! recovery) replayed through the scheduler, the link model and the MPTCP receiver
//! (`mptcp::p1_examples`). `cargo test -p mobipath-sim --test p1_examples -- --nocapture` prints
//! the traces; `mobipath reproduce p1` puts them in its report.
use mobipath_sim::mptcp::p1_examples::{fig5, fig6, Request, Trace};

fn print(name: &str, t: &Trace) {
    eprintln!("{name}: packet | path | subflow seq | predicted (ms) | actual (ms) | receiver");
    for r in &t.rows {
        let actual = r.actual_us.map_or("lost".to_string(), |a| format!("{:.3}", a / 1000.0));
        let copy = if r.copy { " (copy)" } else { "" };
        eprintln!(
            "{:>4}{copy} | {} | {} | {:.3} | {actual} | {}",
            r.packet,
            r.path,
            r.subflow_seq,
            r.predicted_us / 1000.0,
            r.receiver
        );
    }
}

fn paths(t: &Trace) -> Vec<usize> {
    t.rows.iter().filter(|r| !r.copy).map(|r| r.path).collect()
}

#[test]
fn fig5_packets_1_to_3_go_to_path_1_packet_4_to_path_2_then_path_1_again() {
    let t = fig5();
    print("Fig. 5", &t);
    // The paper's assignment for packets 1-5; the merged order continues with 6 on path 1, 7 on
    // path 2 (T = 7.5 ms against path 1's 8 ms), 8 on path 1.
    assert_eq!(paths(&t), vec![1, 1, 1, 2, 1, 1, 2, 1]);
    assert_eq!(&paths(&t)[..5], &[1, 1, 1, 2, 1]);
    // Each path is FIFO: subflow sequence numbers count up per path.
    let seqs: Vec<(usize, u64)> = t.rows.iter().map(|r| (r.path, r.subflow_seq)).collect();
    assert_eq!(
        seqs,
        vec![(1, 1), (1, 2), (1, 3), (2, 1), (1, 4), (1, 5), (2, 2), (1, 6)]
    );
    // T_{i,n} = (n-1)·D_t + RTT_i/2 is what the link model delivers, and packets arrive in
    // connection order: the receiver holds nothing.
    for r in &t.rows {
        let a = r.actual_us.expect("nothing is lost in Fig. 5");
        assert!(
            (a - r.predicted_us).abs() <= 1.0,
            "packet {}: predicted {} µs, arrived {a} µs",
            r.packet,
            r.predicted_us
        );
    }
    let arrivals: Vec<f64> = t.rows.iter().map(|r| r.actual_us.unwrap()).collect();
    assert!(arrivals.windows(2).all(|w| w[0] < w[1]), "out of order: {arrivals:?}");
    assert!(
        t.rows.iter().all(|r| r.receiver == "delivered in order"),
        "{:?}",
        t.rows
    );
    assert!(t.requests.is_empty());
    assert_eq!(t.delivered_packets, 8);
}

#[test]
fn fig6_dsn_7_lost_on_path_2_is_requested_on_path_1_after_dsn_8_9_and_10() {
    let t = fig6();
    print("Fig. 6", &t);
    // The figure's mapping: DSNs 1-6 on path 1, 7 and 8 on path 2 (its sequence 1 and 2), 9 on
    // path 1 (its sequence 7), 10 on path 2 (sequence 3).
    assert_eq!(paths(&t), vec![1, 1, 1, 1, 1, 1, 2, 2, 1, 2]);
    let row = |n: u64| t.rows.iter().find(|r| r.packet == n && !r.copy).unwrap();
    assert_eq!((row(7).path, row(7).subflow_seq), (2, 1));
    assert_eq!((row(8).path, row(8).subflow_seq), (2, 2));
    assert_eq!((row(9).path, row(9).subflow_seq), (1, 7));
    assert_eq!((row(10).path, row(10).subflow_seq), (2, 3));
    assert_eq!(row(7).actual_us, None);
    // Nothing is asked on DSN 8 (the watch starts) or DSN 9; DSN 10 is the third packet beyond
    // the hole: DSN 7 is asked for on path 1, once, when DSN 10 arrives.
    assert!(
        row(8).receiver.starts_with("held") && !row(8).receiver.contains("asks"),
        "{}",
        row(8).receiver
    );
    assert!(
        row(9).receiver.starts_with("held") && !row(9).receiver.contains("asks"),
        "{}",
        row(9).receiver
    );
    assert!(
        row(10).receiver.contains("asks for packet 7 on path 1"),
        "{}",
        row(10).receiver
    );
    assert_eq!(
        t.requests,
        vec![Request {
            packet: 7,
            path: 1,
            at_us: row(10).actual_us.unwrap()
        }]
    );
    // The copy goes over path 1 (its next sequence number, 8) and arrives as predicted; then
    // everything up to DSN 10 is delivered.
    let copy = t.rows.iter().find(|r| r.copy).expect("a copy of DSN 7");
    assert_eq!((copy.packet, copy.path, copy.subflow_seq), (7, 1, 8));
    let a = copy.actual_us.unwrap();
    assert!(
        (a - copy.predicted_us).abs() <= 1.0,
        "copy predicted {} µs, arrived {a} µs",
        copy.predicted_us
    );
    assert!(copy.receiver.contains("up to 10"), "{}", copy.receiver);
    assert_eq!(t.delivered_packets, 10);
    // Predictions hold for every original too.
    for r in t.rows.iter().filter(|r| r.actual_us.is_some()) {
        assert!(
            (r.actual_us.unwrap() - r.predicted_us).abs() <= 1.0,
            "packet {}",
            r.packet
        );
    }
}
