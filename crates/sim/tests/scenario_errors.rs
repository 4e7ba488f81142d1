//! Invalid scenarios: each yields its specific message naming field, value and allowed range.
use mobipath_sim::api::validate_toml;
use std::path::Path;

const GOOD: &str = r#"
duration_s = 10
[[links]]
name = "l"
rate_mbps = 10
delay_ms = 10
[[paths]]
name = "p"
links = ["l"]
[[flows]]
name = "f"
path = "p"
cc = "cubic"
traffic = { kind = "bulk" }
"#;

fn errors(text: &str) -> Vec<String> {
    // One folder per call: tests run in parallel and must not see each other's half-written file.
    static N: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let n = N.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    let dir = std::env::temp_dir().join(format!("mobipath-scenario-errors-{}-{n}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("bad.trace"), "0\n5\nabc\n").unwrap();
    std::fs::write(dir.join("table-c.csv"), "operator,start_m,end_m,count\nC,100,200,1\n").unwrap();
    validate_toml(text, "t.toml", &dir)
        .into_iter()
        .map(|e| e.to_string())
        .collect()
}

#[test]
fn the_reference_scenario_is_valid() {
    assert!(errors(GOOD).is_empty(), "{:?}", errors(GOOD));
}

#[test]
fn each_invalid_scenario_gets_its_specific_error() {
    let cases: &[(&str, &str, &str)] = &[
        (
            "negative rate",
            "rate_mbps = 10",
            "links[0].rate_mbps = -5: must be > 0",
        ),
        (
            "unknown congestion control",
            "cc = \"cubic\"",
            "flows[0].cc = hybla: unknown congestion control; allowed: tahoe, reno, newreno, cubic, bbr, vegas",
        ),
        (
            "missing path",
            "path = \"p\"",
            "flows[0].path = nowhere: no path with this name; defined: p",
        ),
        (
            "malformed trace",
            "rate_mbps = 10",
            "links[0].trace.file = bad.trace: line 3: expected `<ms>` integer, found `abc`",
        ),
        (
            "unknown key",
            "delay_ms = 10",
            "links[0].colour: unknown field `colour`",
        ),
        ("unknown top-level key", "duration_s = 10", "durations: unknown key"),
        (
            "bad loss probability",
            "delay_ms = 10",
            "links[0].loss.p = 1.5: must be in [0, 1]",
        ),
        (
            "zero duration",
            "duration_s = 10",
            "duration_s = 0: must be in [0.001, 86400] seconds",
        ),
        (
            "wrong type",
            "delay_ms = 10",
            "links[0].delay_ms = \"ten\": invalid type",
        ),
        (
            "unknown traffic kind",
            "traffic = { kind = \"bulk\" }",
            "flows[0].traffic.kind = \"video\": unknown variant `video`, expected one of `bulk`, `file`, `cbr`",
        ),
        (
            "unknown retransmission timer",
            "traffic = { kind = \"bulk\" }",
            "flows[0].tcp.timer = \"bsd44\": unknown variant `bsd44`, expected `linux` or `bsd`",
        ),
    ];
    let replacements: &[&str] = &[
        "rate_mbps = -5",
        "cc = \"hybla\"",
        "path = \"nowhere\"",
        "trace = { format = \"mahimahi\", file = \"bad.trace\" }",
        "delay_ms = 10\ncolour = \"red\"",
        "duration_s = 10\ndurations = 3",
        "delay_ms = 10\nloss = { model = \"bernoulli\", p = 1.5 }",
        "duration_s = 0",
        "delay_ms = \"ten\"",
        "traffic = { kind = \"video\" }",
        "traffic = { kind = \"bulk\" }\ntcp = { timer = \"bsd44\" }",
    ];
    for ((what, from, expected), to) in cases.iter().zip(replacements) {
        let text = GOOD.replacen(from, to, 1);
        let errs = errors(&text);
        assert!(
            errs.iter().any(|e| e.starts_with(expected)),
            "{what}: expected an error starting with {expected:?}, got {errs:?}"
        );
    }
}

#[test]
fn every_error_is_reported_not_just_the_first() {
    let text = GOOD
        .replacen("rate_mbps = 10", "rate_mbps = -5\nbogus = 1", 1)
        .replacen("cc = \"cubic\"", "cc = \"hybla\"", 1)
        .replacen("links = [\"l\"]", "links = [\"l\", \"m\"]", 1);
    let errs = errors(&text);
    for expected in [
        "links[0].bogus",
        "links[0].rate_mbps = -5",
        "flows[0].cc = hybla",
        "paths[0].links[1] = m",
    ] {
        assert!(
            errs.iter().any(|e| e.starts_with(expected)),
            "missing {expected}: {errs:?}"
        );
    }
}

#[test]
fn not_toml_at_all_is_one_clear_error() {
    let errs = validate_toml("this is = = not toml", "x.toml", Path::new("."));
    assert_eq!(errs.len(), 1);
    assert!(errs[0].to_string().starts_with("not valid TOML"), "{}", errs[0]);
}

/// Nonsense that used to run silently (issue 10's fuzz campaign): each is refused, naming the
/// field and what is allowed.
#[test]
fn nonsense_is_refused_with_the_field_named() {
    let hst = "\n[hst]\nlinks = [\"l\", \"l\"]\n";
    let cases: &[(&str, &str, &str, &str)] = &[
        (
            "unknown key in a file traffic",
            "traffic = { kind = \"bulk\" }",
            "traffic = { kind = \"file\", bytes = 100, colour = 1 }",
            "flows[0].traffic.colour: unknown field `colour`",
        ),
        (
            "unknown key in bulk traffic",
            "traffic = { kind = \"bulk\" }",
            "traffic = { kind = \"bulk\", bytes = 5000 }",
            "flows[0].traffic.bytes: unknown field `bytes`",
        ),
        (
            "array for a table",
            "cc = \"cubic\"",
            "cc = \"cubic\"\nreceiver = []",
            "flows[0].receiver = [...]: must be a table",
        ),
        (
            "positional table",
            "cc = \"cubic\"",
            "cc = \"cubic\"\ntcp = [1000]",
            "flows[0].tcp = [...]: must be a table",
        ),
        (
            "outage after the end",
            "delay_ms = 10",
            "delay_ms = 10\noutages = [ { start_s = 20, duration_s = 1 } ]",
            "links[0].outages[0].start_s = 20: must be before the run ends (duration_s = 10)",
        ),
        (
            "read pause after the end",
            "cc = \"cubic\"",
            "cc = \"cubic\"\nreceiver = { read_pauses = [ { start_s = 11, duration_s = 1 } ] }",
            "flows[0].receiver.read_pauses[0].start_s = 11: must be before the run ends",
        ),
        (
            "one link for two operators",
            "traffic = { kind = \"bulk\" }",
            "traffic = { kind = \"bulk\" }\n",
            "hst.links[1] = l: already follows another operator",
        ),
        (
            "empty scenario name",
            "duration_s = 10",
            "duration_s = 10\nname = \"\"",
            "name = \"\": must not be empty",
        ),
        (
            "empty flow name",
            "name = \"f\"",
            "name = \"\"",
            "flows[0].name = \"\": must not be empty",
        ),
        (
            "empty path name",
            "name = \"p\"\nlinks",
            "name = \"\"\nlinks",
            "paths[0].name = \"\": must not be empty",
        ),
        (
            "shorter than one event",
            "duration_s = 10",
            "duration_s = 1e-7",
            "duration_s = 0.0000001: must be in [0.001, 86400] seconds",
        ),
        (
            "absurd queue",
            "delay_ms = 10",
            "delay_ms = 10\nqueue_packets = 1000000000000",
            "links[0].queue_packets = 1000000000000: must be in [1, 100000000]",
        ),
        (
            "absurd byte queue",
            "delay_ms = 10",
            "delay_ms = 10\nqueue_bytes = 1000000000000000",
            "links[0].queue_bytes = 1000000000000000: must be in [1500",
        ),
        (
            "RACK without SACK",
            "cc = \"cubic\"",
            "cc = \"cubic\"\ntcp = { sack = false, rack = true }",
            "flows[0].tcp.rack = true: needs sack = true",
        ),
        (
            "TLP without SACK",
            "cc = \"cubic\"",
            "cc = \"cubic\"\ntcp = { sack = false, tlp = true }",
            "flows[0].tcp.tlp = true: needs sack = true",
        ),
        (
            "not a switch",
            "cc = \"cubic\"",
            "cc = \"cubic\"\ntcp = { frto = \"yes\" }",
            "flows[0].tcp.frto = \"yes\": invalid type",
        ),
        (
            "unknown ssthresh basis",
            "cc = \"cubic\"",
            "cc = \"cubic\"\ntcp = { reno_ssthresh = \"pipe\" }",
            "flows[0].tcp.reno_ssthresh",
        ),
        (
            "unknown increase",
            "cc = \"cubic\"",
            "cc = \"cubic\"\ntcp = { reno_increase = \"per-byte\" }",
            "flows[0].tcp.reno_increase",
        ),
        (
            "table of another network",
            "traffic = { kind = \"bulk\" }",
            "traffic = { kind = \"bulk\" }\n[hst]\nlinks = [\"l\"]\ntable = \"table-c.csv\"\n",
            "table-c.csv = C: rows of an unknown operator; operators here: A, B",
        ),
    ];
    for (what, from, to, expected) in cases {
        let mut text = GOOD.replacen(from, to, 1);
        if *what == "one link for two operators" {
            text.push_str(hst);
        }
        let errs = errors(&text);
        assert!(
            errs.iter().any(|e| e.starts_with(expected)),
            "{what}: expected an error starting with {expected:?}, got {errs:?}"
        );
        if what.starts_with("unknown key") {
            assert_eq!(errs.len(), 1, "{what}: one error, not a second wrong one: {errs:?}");
        }
    }
    // A long value is quoted cut, with its length.
    let long = "x".repeat(300);
    let errs = errors(&GOOD.replacen("path = \"p\"", &format!("path = \"{long}\""), 1));
    assert!(
        errs.iter().any(|e| e.contains("... (300 characters)") && e.len() < 250),
        "{errs:?}"
    );
}

#[test]
fn example_scenarios_validate() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios");
    let mut n = 0;
    for sub in ["examples", "bench"] {
        for entry in std::fs::read_dir(root.join(sub)).unwrap() {
            let p = entry.unwrap().path();
            if p.extension().is_some_and(|e| e == "toml") {
                let text = std::fs::read_to_string(&p).unwrap();
                let errs = validate_toml(&text, &p.display().to_string(), p.parent().unwrap());
                assert!(errs.is_empty(), "{}: {:?}", p.display(), errs);
                n += 1;
            }
        }
    }
    assert!(n >= 4);
}

/// A valid scenario with an LTE cell (P4): one uplink and one downlink UE.
const GOOD_CELL: &str = r#"
duration_s = 5
[[links]]
name = "core"
rate_mbps = 1000
delay_ms = 10
[[cells]]
name = "enb"
duplex = "tdd"
tdd_config = 2
ul_congestion = { policy = "bsr-drop" }
[[cells.ues]]
name = "a"
dl_cqi = 15
ul_cqi = 9
[[cells.ues]]
name = "b"
dl_cqi = 15
ul_cqi = 9
[[paths]]
name = "up"
from = "a"
to = "server"
links = ["enb", "core"]
[[paths]]
name = "down"
from = "server"
to = "b"
links = ["core", "enb"]
[[flows]]
name = "u"
path = "up"
cc = "newreno"
traffic = { kind = "bulk" }
[[flows]]
name = "d"
path = "down"
cc = "newreno"
traffic = { kind = "bulk" }
"#;

/// Bad cell configurations (issue 13): unknown TDD configuration, zero resource blocks, p
/// outside [0, 1], thresholds in the wrong order, ... each named with its field and range.
#[test]
fn bad_cell_configurations_get_their_specific_error() {
    assert!(errors(GOOD_CELL).is_empty(), "{:?}", errors(GOOD_CELL));
    let pol = "ul_congestion = { policy = \"bsr-drop\" }";
    let cases: &[(&str, &str, &str, &str)] = &[
        ("unknown TDD configuration", "tdd_config = 2", "tdd_config = 7", "cells[0].tdd_config = 7: unknown TDD uplink-downlink configuration: must be in [0, 6]"),
        ("TDD without a configuration", "tdd_config = 2", "", "cells[0].tdd_config: missing"),
        ("zero uplink resource blocks", "tdd_config = 2", "tdd_config = 2\npucch_rbs = 100", "cells[0].pucch_rbs = 100: leaves zero uplink resource blocks for PUSCH: must be in [0, 99]"),
        ("zero resource blocks at 1.4 MHz", "tdd_config = 2", "tdd_config = 2\nbandwidth_mhz = 1.4\npucch_rbs = 6", "cells[0].pucch_rbs = 6: leaves zero uplink resource blocks for PUSCH: must be in [0, 5]"),
        ("unknown bandwidth", "tdd_config = 2", "tdd_config = 2\nbandwidth_mhz = 7", "cells[0].bandwidth_mhz = 7: must be one of 1.4, 3, 5, 10, 15, 20"),
        ("p above 1", pol, "ul_congestion = { policy = \"bsr-drop\", p = 1.5 }", "cells[0].ul_congestion.p = 1.5: must be in [0, 1]"),
        ("p below 0", pol, "ul_congestion = { policy = \"red-large\", p = -0.1 }", "cells[0].ul_congestion.p = -0.1: must be in [0, 1]"),
        ("computed p above 1", pol, "ul_congestion = { policy = \"bsr-drop\", p = \"consistent\", cw_target = 2, t_peak_mbps = 100 }", "cells[0].ul_congestion.p = \"consistent\": gives p = "),
        ("TH_Cell_1 above TH_Cell_N", pol, "ul_congestion = { policy = \"bsr-drop\", th_cell_1_bytes = 500000 }", "cells[0].ul_congestion.th_cell_1_bytes: thresholds in the wrong order: TH_Cell_1 = 500000 B (one UE) exceeds TH_Cell_N = 438000 B"),
        ("TH_UE above TH_Cell_n", pol, "ul_congestion = { policy = \"bsr-drop\", th_ue_bytes = 300000 }", "cells[0].ul_congestion.th_ue_bytes: thresholds in the wrong order: TH_UE = 300000 B must be below"),
        ("odd CW_target", pol, "ul_congestion = { policy = \"bsr-drop\", cw_target = 5 }", "cells[0].ul_congestion.cw_target = 5: must be even"),
        ("TH_Packet below an ACK", pol, "ul_congestion = { policy = \"bsr-drop\", th_packet_bytes = 40 }", "cells[0].ul_congestion.th_packet_bytes = 40: must be in [52, 1511]"),
        ("unknown MAC scheduler", "tdd_config = 2", "tdd_config = 2\nscheduler = { ul = \"fifo\" }", "cells[0].scheduler.ul = \"fifo\": unknown MAC scheduler; allowed: rr, pf, bsr-proportional"),
        ("CQI out of the table", "dl_cqi = 15", "dl_cqi = 16", "cells[0].ues[0].dl_cqi = 16: must be in [0, 15]"),
        ("unknown key in a cell", "tdd_config = 2", "tdd_config = 2\ncolour = 1", "cells[0].colour: unknown field `colour`"),
    ];
    for (what, from, to, expected) in cases {
        assert!(GOOD_CELL.contains(from), "{what}: {from:?} not in the reference");
        let errs = errors(&GOOD_CELL.replacen(from, to, 1));
        assert!(
            errs.iter().any(|e| e.starts_with(expected)),
            "{what}: expected an error starting with {expected:?}, got {errs:?}"
        );
    }
}

/// A token bucket on the flow's path must hold one frame (MSS 1448 + 52 header bytes + 14 of
/// frame overhead = 1514) in both its burst and its limit; the range checks alone accept 1514.
#[test]
fn a_token_bucket_smaller_than_one_frame_of_the_flow_is_refused() {
    let tb = GOOD.replace(
        "rate_mbps = 10\n",
        "token_bucket = { rate_mbps = 10, burst_bytes = 1514, limit_bytes = 1514 }\n",
    );
    assert!(errors(&tb).is_empty(), "{:?}", errors(&tb));
    let big = tb.replace(
        "traffic = { kind = \"bulk\" }",
        "traffic = { kind = \"bulk\" }\ntcp = { mss_bytes = 1460 }",
    );
    let e = errors(&big);
    for field in ["burst_bytes", "limit_bytes"] {
        assert!(
            e.iter().any(|m| m.starts_with(&format!(
                "links[0].token_bucket.{field} = 1514: smaller than one frame of flow f (1526 bytes"
            ))),
            "{e:?}"
        );
    }
}

#[test]
fn a_type_error_does_not_hide_the_other_errors_of_its_table() {
    // The reported case: a type error hid the range errors of its link, and a loss-model typo
    // hid the model's own range error. All four come in one pass.
    let text = GOOD
        .replace("rate_mbps = 10", "rate_mbps = 0")
        .replace(
            "delay_ms = 10",
            "delay_ms = \"twenty\"\nloss = { model = \"bernouli\", p = 1.5 }",
        )
        .replace("cc = \"cubic\"", "cc = \"cubic\"\nstart_s = \"soon\"\nstop_s = -1");
    let e = errors(&text);
    let has = |prefix: &str| e.iter().any(|x| x.starts_with(prefix));
    assert!(has("links[0].delay_ms = \"twenty\": invalid type"), "{e:#?}");
    assert!(has("links[0].rate_mbps = 0: must be > 0"), "{e:#?}");
    assert!(has("links[0].loss"), "{e:#?}");
    assert!(has("links[0].loss.p = 1.5: must be in [0, 1]"), "{e:#?}");
    assert!(has("flows[0].start_s = \"soon\": invalid type"), "{e:#?}");
    assert!(has("flows[0].stop_s = -1"), "{e:#?}");
    // The stand-in values never show up as errors of their own.
    assert_eq!(
        e.iter().filter(|x| x.starts_with("links[0].delay_ms")).count(),
        1,
        "{e:#?}"
    );
    assert_eq!(
        e.iter().filter(|x| x.starts_with("flows[0].start_s")).count(),
        1,
        "{e:#?}"
    );
}

#[test]
fn a_device_as_a_trace_is_refused_at_once() {
    let t0 = std::time::Instant::now();
    let text = GOOD.replace(
        "rate_mbps = 10",
        "trace = { format = \"mahimahi\", file = \"/dev/zero\" }",
    );
    let e = errors(&text);
    assert!(
        e.iter()
            .any(|x| x.contains("/dev/zero") && x.contains("is a device, not a regular file")),
        "{e:#?}"
    );
    assert!(t0.elapsed() < std::time::Duration::from_secs(5));
}

#[test]
fn fields_that_cannot_take_effect_are_refused_saying_why() {
    let with = |tcp: &str, receiver: &str| {
        GOOD.replace(
            "traffic = { kind = \"bulk\" }",
            &format!("traffic = {{ kind = \"bulk\" }}\ntcp = {{ {tcp} }}\nreceiver = {{ {receiver} }}"),
        )
    };
    let e = errors(&with(
        "tso = false, reno_increase = \"per-ack\", reno_ssthresh = \"flight\"",
        "",
    ));
    assert_eq!(e.len(), 3, "{e:#?}");
    assert!(
        e[0].starts_with("flows[0].tcp.tso = false: has no effect with cc = \"cubic\""),
        "{e:#?}"
    );
    assert!(e[1].starts_with("flows[0].tcp.reno_increase: has no effect"), "{e:#?}");
    assert!(e[2].starts_with("flows[0].tcp.reno_ssthresh: has no effect"), "{e:#?}");
    let e = errors(&with(
        "",
        "ack_on_read = false, read_delay_us = 50, delayed_ack = false, delack_ms = 100",
    ));
    assert_eq!(e.len(), 2, "{e:#?}");
    assert!(e[0].starts_with("flows[0].receiver.read_delay_us = 50: has no effect with ack_on_read = false"));
    assert!(e[1].starts_with("flows[0].receiver.delack_ms = 100: has no effect with delayed_ack = false"));
    // Where they do take effect they are accepted.
    let ok = with("", "read_delay_us = 50, delack_ms = 100").replace("\"cubic\"", "\"bbr\"");
    assert!(errors(&ok).is_empty(), "{:#?}", errors(&ok));
    let ok = with("tso = false", "").replace("\"cubic\"", "\"bbr\"");
    assert!(errors(&ok).is_empty(), "{:#?}", errors(&ok));
    let ok = with("reno_increase = \"per-ack\"", "").replace("\"cubic\"", "\"newreno\"");
    assert!(errors(&ok).is_empty(), "{:#?}", errors(&ok));
}

#[test]
fn daps_on_a_link_with_a_handoff_scheme_is_refused_naming_the_field() {
    let base = r#"
duration_s = 5
[[links]]
name = "a"
rate_mbps = 10
delay_ms = 10
[[paths]]
name = "p"
links = ["a"]
[[flows]]
name = "f"
path = "p"
cc = "tahoe"
traffic = { kind = "bulk" }
[[handoffs]]
link = "a"
pattern = { kind = "train" }
[hst]
links = ["a"]
[hst.handover]
"#;
    let daps = errors(&format!("{base}type = \"daps\"\n"));
    assert!(
        daps.iter()
            .any(|e| e.contains("handoffs[0].pattern.kind") && e.contains("daps")),
        "{daps:?}"
    );
    let hard = errors(&format!("{base}type = \"hard\"\n"));
    assert!(!hard.iter().any(|e| e.contains("handoffs[0].pattern.kind")), "{hard:?}");
}
