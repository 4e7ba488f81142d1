//! Property tests of the scenario front door (`api::validate_toml` / `api::run_toml`), on
//! random but structurally plausible scenarios written as TOML text:
//!
//! - **validates ⇒ runs**: whenever `validate_toml` accepts a generated scenario, `run_toml`
//!   completes, and its summary satisfies, for every flow: `delivery_errors == 0` (the
//!   application received every byte exactly once, in order), `bytes_delivered <= bytes_sent`,
//!   and goodput <= the sum over the flow's paths of each path's bottleneck (the smallest peak
//!   forward rate of its links), with a tolerance of 1 % and three packets; and (every fourth
//!   scenario) a second run gives the same summary;
//! - **invalid ⇒ errors**: each of a list of mutations that break a valid scenario (a bad range,
//!   a typo'd key, a dangling reference, a missing field, ...) yields errors naming the field,
//!   from both `validate_toml` and `run_toml`, and never a panic.
//!
//! The generator covers links (constant rates, rate schedules, mahimahi and per-second traces,
//! packet and byte queues, Bernoulli and Gilbert–Elliott loss with every sojourn law, reordering,
//! outages with hold/drop and forwarding, reverse-direction overrides), multi-link paths, TCP
//! flows with every single-path congestion control and MPTCP flows with every coupled one and
//! every scheduler (with its parameters, and every wrapper — `pha(·)`, `oracle(·)`, `block(·)` —
//! over an `[hst]` train with a handover table; names from `api::names_json`), a network element
//! at a node that paths go `via`, every traffic kind, TCP, receiver and MPTCP options; durations
//! of 0.1–2 s. Fixed case counts and a fixed RNG seed keep it deterministic and under
//! ~30 s in release (`cargo test --release -p mobipath-sim --test scenario_properties`).
use mobipath_sim::api::{names_json, run_toml, validate_toml};
use proptest::prelude::*;
use proptest::strategy::ValueTree;
use proptest::test_runner::{Config, RngAlgorithm, TestRng, TestRunner};
use std::path::{Path, PathBuf};

/// Generated scenarios that validate (and run), and invalid mutations checked.
const VALID_CASES: u32 = 600;
const MUTATION_CASES: u32 = 100;

/// The names a registry accepts (`api::names_json`: "cc", "coupled_cc", "schedulers",
/// "wrappers"), so the generator follows what the code accepts.
fn names(registry: &str) -> Vec<String> {
    let v: serde_json::Value = serde_json::from_str(&names_json()).unwrap();
    let list = v[registry]
        .as_array()
        .unwrap_or_else(|| panic!("names_json has no {registry:?}: {v}"));
    list.iter().map(|x| x.as_str().unwrap().to_string()).collect()
}

/// Rounds to 3 decimals so the TOML text stays readable.
fn r3(x: f64) -> f64 {
    (x * 1000.0).round() / 1000.0
}

/// A TOML fragment and the peak forward rate it allows (Mbit/s).
type Cap = (String, f64);

/// Trace files the generated scenarios may name, and their peak rates.
const MM_TRACE: &str = "mm.trace"; // opportunities every 3 ms: 1500 B / 3 ms = 4 Mbit/s
const MM_PEAK_MBPS: f64 = 1500.0 * 8.0 / 0.003 / 1e6 * 1.06; // 21 opportunities per 60 ms period
const PS_TRACE: &str = "ps.trace";
const PS_PEAK_MBPS: f64 = 12.0;

/// The folder the generated scenarios' files are in (written once per test process: the tests
/// run in parallel and must not see a file being rewritten).
fn data_dir() -> PathBuf {
    static DIR: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    DIR.get_or_init(|| {
        let dir = std::env::temp_dir().join(format!("mobipath-props-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let mm: String = (0..=20).map(|i| format!("{}\n", i * 3)).collect();
        std::fs::write(dir.join(MM_TRACE), mm).unwrap();
        std::fs::write(dir.join(PS_TRACE), "1 5\r\n2 12\r\n4 2.5\r\n").unwrap();
        std::fs::write(dir.join("table.csv"), include_str!("../../../scenarios/p0/table.csv")).unwrap();
        dir
    })
    .clone()
}

fn capacity() -> impl Strategy<Value = Cap> {
    prop_oneof![
        4 => (0.05f64..40.0).prop_map(|r| (format!("rate_mbps = {}", r3(r)), r3(r))),
        1 => prop::sample::select(vec![0.000001, 0.001, 0.1]).prop_map(|r| (format!("rate_mbps = {r}"), r)),
        2 => prop::collection::vec((0.01f64..0.8, 0.0f64..40.0), 1..4).prop_map(|steps| {
            let mut at = 0.0;
            let mut parts = Vec::new();
            let mut peak: f64 = 0.0;
            for (k, (gap, rate)) in steps.iter().enumerate() {
                if k > 0 {
                    at = r3(at + gap);
                }
                parts.push(format!("{{ at_s = {at}, rate_mbps = {} }}", r3(*rate)));
                peak = peak.max(r3(*rate));
            }
            (format!("rate_schedule = [ {} ]", parts.join(", ")), peak)
        }),
        1 => Just((format!("trace = {{ format = \"mahimahi\", file = \"{MM_TRACE}\" }}"), MM_PEAK_MBPS)),
        1 => prop::sample::select(vec!["zero", "hold"])
            .prop_map(|m| (format!("trace = {{ format = \"mbps-per-second\", file = \"{PS_TRACE}\", missing = \"{m}\" }}"), PS_PEAK_MBPS)),
    ]
}

fn queue() -> impl Strategy<Value = String> {
    prop_oneof![
        Just(String::new()),
        (1u32..400).prop_map(|q| format!("queue_packets = {q}")),
        prop::sample::select(vec![0u32, 1, 1, 2, 2, 100_000, 100_000]).prop_map(|q| format!("queue_packets = {q}")),
        (1500u32..400_000).prop_map(|q| format!("queue_bytes = {q}")),
    ]
}

fn sojourn() -> impl Strategy<Value = String> {
    prop_oneof![
        (0.001f64..0.5).prop_map(|m| format!("{{ sojourn = \"deterministic\", mean_s = {} }}", r3(m).max(0.001))),
        (0.001f64..0.5).prop_map(|m| format!("{{ sojourn = \"exponential\", mean_s = {} }}", r3(m).max(0.001))),
        (0.0f64..0.2, 0.001f64..0.3).prop_map(|(a, d)| format!(
            "{{ sojourn = \"uniform\", min_s = {}, max_s = {} }}",
            r3(a),
            r3(a + d).max(0.001)
        )),
    ]
}

/// `loss = ...` or nothing.
fn loss() -> impl Strategy<Value = String> {
    prop_oneof![
        3 => Just(String::new()),
        2 => (0.0f64..0.2).prop_map(|p| format!("loss = {{ model = \"bernoulli\", p = {} }}", r3(p))),
        1 => prop::sample::select(vec![0.0, 0.5, 0.99, 1.0]).prop_map(|p| format!("loss = {{ model = \"bernoulli\", p = {p} }}")),
        1 => (0.0f64..0.05, 0.1f64..1.0, prop::bool::ANY, sojourn(), sojourn()).prop_map(|(g, b, start_bad, sg, sb)| {
            let start = if start_bad { "bad" } else { "good" };
            format!("loss = {{ model = \"gilbert-elliott\", p_good = {}, p_bad = {}, start = \"{start}\", good = {sg}, bad = {sb} }}", r3(g), r3(b))
        }),
    ]
}

fn reorder() -> impl Strategy<Value = String> {
    prop_oneof![
        3 => Just(String::new()),
        1 => (0.0f64..0.3, 0.0f64..50.0).prop_map(|(p, d)| format!("reorder = {{ p = {}, extra_delay_ms = {} }}", r3(p), r3(d))),
    ]
}

/// Non-overlapping outages (`hold` with optional forwarding, or `drop`).
fn outages() -> impl Strategy<Value = String> {
    // Gaps between outages; now and then negative (overlap: invalid) or long (past the run's end).
    let gap = prop_oneof![14 => 0.0f64..0.6, 1 => -0.1f64..0.0, 1 => 1.0f64..5.0];
    let one = (
        gap,
        0.001f64..0.3,
        prop::bool::ANY,
        prop::option::of((0.0f64..30.0, 0.0f64..0.5, 0.0f64..1.0)),
    );
    prop_oneof![
        2 => Just(String::new()),
        1 => prop::collection::vec(one, 1..3).prop_map(|os| {
            let mut t = 0.0;
            let items: Vec<String> = os
                .iter()
                .map(|(gap, dur, drop, fw)| {
                    let start = r3((t + gap).max(0.0));
                    let d = r3(*dur).max(0.001);
                    t = start + d + 0.001;
                    let fw = match (drop, fw) {
                        (false, Some((delay, loss, qloss))) => format!(
                            ", forwarding = {{ delay_ms = {}, loss = {}, queued_loss = {} }}",
                            r3(*delay),
                            r3(*loss),
                            r3(*qloss)
                        ),
                        _ => String::new(),
                    };
                    let queued = if *drop { "drop" } else { "hold" };
                    format!("{{ start_s = {start}, duration_s = {d}, queued = \"{queued}\"{fw} }}")
                })
                .collect();
            format!("outages = [ {} ]", items.join(", "))
        }),
    ]
}

/// `reverse = { ... }` overrides (each optional), or nothing.
fn reverse() -> impl Strategy<Value = String> {
    let fields = (
        prop::option::of(0.0f64..50.0),
        prop::option::of(0.05f64..20.0),
        prop::option::of(1u32..200),
        prop::option::of(0.0f64..0.1),
    );
    prop_oneof![
        2 => Just(String::new()),
        1 => fields.prop_map(|(d, r, q, l)| {
            let mut f = Vec::new();
            if let Some(d) = d {
                f.push(format!("delay_ms = {}", r3(d)));
            }
            if let Some(r) = r {
                f.push(format!("rate_mbps = {}", r3(r).max(0.05)));
            }
            if let Some(q) = q {
                f.push(format!("queue_packets = {q}"));
            }
            if let Some(l) = l {
                f.push(format!("loss = {{ model = \"bernoulli\", p = {} }}", r3(l)));
            }
            format!("reverse = {{ {} }}", f.join(", "))
        }),
    ]
}

#[derive(Clone, Debug)]
struct Link {
    toml: String,
    peak_mbps: f64,
    has_outages: bool,
}

fn link() -> impl Strategy<Value = Link> {
    let delay = prop_oneof![4 => 0.0f64..80.0, 1 => prop::sample::select(vec![0.0, 0.000001, 500.0, 1500.0])];
    (delay, capacity(), queue(), loss(), reorder(), outages(), reverse()).prop_map(
        |(delay, (cap, peak), q, l, ro, out, rev)| {
            let has_outages = !out.is_empty();
            let body = [format!("delay_ms = {}", r3(delay)), cap, q, l, ro, out, rev]
                .into_iter()
                .filter(|s| !s.is_empty())
                .collect::<Vec<_>>()
                .join("\n");
            Link {
                toml: body,
                peak_mbps: peak,
                has_outages,
            }
        },
    )
}

/// A scheduler line for an MPTCP flow: a name, a table with the scheduler's own parameters, or a
/// train wrapper (`with_hst`: oracle/block need `[hst]`; `with_table`: pha needs its table).
fn scheduler(with_hst: bool, with_table: bool) -> impl Strategy<Value = String> {
    let scheds = names("schedulers");
    let plain = prop::sample::select(scheds.clone()).prop_map(|n| format!("scheduler = \"{n}\""));
    let params = prop_oneof![
        (1i64..20, prop::bool::ANY).prop_map(|(n, c)| format!(
            "scheduler = {{ name = \"roundrobin\", num_segments = {n}, cwnd_limited = {c} }}"
        )),
        (0.0f64..300.0).prop_map(|d| format!("scheduler = {{ name = \"ecf\", delta_floor_ms = {} }}", r3(d))),
        (0.0f64..5.0, 0.0f64..0.5).prop_map(|(a, e)| format!(
            "scheduler = {{ name = \"peekaboo\", alpha = {}, epsilon = {} }}",
            r3(a),
            r3(e)
        )),
        prop::bool::ANY
            .prop_map(|o| format!("scheduler = {{ name = \"delay-predictive\", rcvbuf_optimisation = {o} }}")),
    ];
    // Every wrapper needs a train; `pha` also its handover table.
    let all_wrappers = names("wrappers");
    assert!(all_wrappers.iter().any(|w| w == "pha"), "{all_wrappers:?}");
    let wrappers: Vec<String> = all_wrappers
        .into_iter()
        .filter(|w| with_table || (with_hst && w != "pha"))
        .collect();
    let wrapped = (
        prop::sample::select(if wrappers.is_empty() {
            vec!["oracle".to_string()]
        } else {
            wrappers.clone()
        }),
        prop::sample::select(scheds),
    )
        .prop_map(|(w, n)| format!("scheduler = \"{w}({n})\""));
    let w = if wrappers.is_empty() { 0 } else { 2 };
    prop_oneof![1 => Just(String::new()), 4 => plain, 2 => params, w => wrapped]
}

#[derive(Clone, Debug)]
struct Flow {
    toml: String,
    /// Indices of the paths the flow uses.
    paths: Vec<usize>,
}

fn traffic() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("traffic = { kind = \"bulk\" }".to_string()),
        (1u64..2_000_000).prop_map(|b| format!("traffic = {{ kind = \"file\", bytes = {b} }}")),
        (0.05f64..20.0).prop_map(|r| format!("traffic = {{ kind = \"cbr\", rate_mbps = {} }}", r3(r).max(0.05))),
    ]
}

fn tcp_opts() -> impl Strategy<Value = (String, u32)> {
    let mss = prop_oneof![4 => Just(1448u32), 1 => 64u32..9000];
    (mss, 1u32..100, prop::bool::ANY, 1.0f64..1000.0, 1.0f64..3000.0, prop::bool::ANY, prop::bool::ANY, prop::bool::ANY).prop_map(
        |(mss, iw, sack, min_rto, init_rto, rfc, ssai, give)| {
            if !give {
                return (String::new(), 1448);
            }
            let style = if rfc { "rfc6298" } else { "linux" };
            (
                format!(
                    "tcp = {{ mss_bytes = {mss}, initial_cwnd = {iw}, sack = {sack}, min_rto_ms = {}, initial_rto_ms = {}, rto_style = \"{style}\", slow_start_after_idle = {ssai} }}",
                    r3(min_rto),
                    r3(init_rto)
                ),
                mss,
            )
        },
    )
}

fn receiver_opts(mss: u32, duration: f64) -> impl Strategy<Value = String> {
    let pauses = prop::collection::vec((0.0f64..1.0, 0.001f64..0.5), 0..3);
    (prop::bool::ANY, 2u64..2000, prop::bool::ANY, 1.0f64..500.0, pauses).prop_map(
        move |(give, bufk, dack, delack, ps)| {
            if !give {
                return String::new();
            }
            let ps: Vec<String> = ps
                .iter()
                .map(|(s, d)| {
                    format!(
                        "{{ start_s = {}, duration_s = {} }}",
                        r3(s * duration),
                        r3(*d).max(0.001)
                    )
                })
                .collect();
            // delack_ms only with delayed ACKs (without, it cannot take effect and is refused).
            let delack = if dack {
                format!(", delack_ms = {}", r3(delack))
            } else {
                String::new()
            };
            format!(
                "receiver = {{ rcv_buf_bytes = {}, delayed_ack = {dack}{delack}, read_pauses = [ {} ] }}",
                bufk * mss as u64,
                ps.join(", ")
            )
        },
    )
}

fn mptcp_opts(n_sub: usize, duration: f64, with_table: bool) -> impl Strategy<Value = String> {
    let buf = prop_oneof![
        Just(String::new()),
        (2u64..2000).prop_map(|p| format!("rcv_buf_packets = {p}")),
        (3000u64..8_000_000).prop_map(|b| format!("rcv_buf_bytes = {b}")),
    ];
    let prio = prop::collection::vec((0.0f64..1.0, 0..n_sub, prop::bool::ANY), 0..3);
    let phad = prop_oneof![
        Just(String::new()),
        (
            prop::sample::select(vec!["paper", "queue-aware", "resend"]),
            0.0f64..500.0
        )
            .prop_map(|(p, l)| format!("pha_d = {{ policy = \"{p}\", lead_ms = {} }}", r3(l))),
    ];
    (
        prop::bool::ANY,
        buf,
        prop::bool::ANY,
        prop::collection::vec(prop::bool::ANY, 0..=n_sub),
        0.0f64..200.0,
        prio,
        phad,
    )
        .prop_map(move |(give, buf, rr, backup, join, prio, phad)| {
            if !give {
                return String::new();
            }
            let backup: Vec<String> = backup.iter().map(|b| b.to_string()).collect();
            let prio: Vec<String> = prio
                .iter()
                .map(|(at, sub, b)| {
                    format!(
                        "{{ at_s = {}, subflow = {sub}, backup = {b} }}",
                        r3(at * duration * 0.99)
                    )
                })
                .collect();
            let mut f = vec![
                format!("receiver_recovery = {rr}"),
                format!("backup = [ {} ]", backup.join(", ")),
                format!("join_delay_ms = {}", r3(join)),
                format!("mp_prio = [ {} ]", prio.join(", ")),
            ];
            if !buf.is_empty() {
                f.push(buf);
            }
            if with_table && !phad.is_empty() {
                f.push(phad);
            }
            format!("mptcp = {{ {} }}", f.join(", "))
        })
}

fn flow(i: usize, n_paths: usize, duration: f64, with_hst: bool, with_table: bool) -> impl Strategy<Value = Flow> {
    let tcp = (0..n_paths, prop::sample::select(names("cc")))
        .prop_map(|(p, c)| (vec![p], format!("path = \"p{p}\"\ncc = \"{c}\"")));
    let all_cc: Vec<String> = names("cc").into_iter().chain(names("coupled_cc")).collect();
    let mp = (
        prop::collection::vec(0..n_paths, 1..=3),
        prop::sample::select(all_cc),
        scheduler(with_hst, with_table),
    )
        .prop_flat_map(move |(ps, c, s)| {
            let n = ps.len();
            mptcp_opts(n, duration, with_table).prop_map(move |m| {
                let names: Vec<String> = ps.iter().map(|p| format!("\"p{p}\"")).collect();
                let body = [
                    format!("paths = [ {} ]", names.join(", ")),
                    format!("cc = \"{c}\""),
                    s.clone(),
                    m,
                ]
                .into_iter()
                .filter(|s| !s.is_empty())
                .collect::<Vec<_>>()
                .join("\n");
                (ps.clone(), body)
            })
        });
    let kind = prop_oneof![tcp, mp];
    (kind, traffic(), 0.0f64..0.5, prop::option::of(0.05f64..1.0), tcp_opts()).prop_flat_map(
        move |((paths, head), tr, start, stop, (tcp, mss))| {
            receiver_opts(mss, duration).prop_map(move |rcv| {
                let start_s = r3(start * duration);
                let stop = stop
                    .map(|s| format!("stop_s = {}", r3(start_s + s * duration).max(start_s + 0.001)))
                    .unwrap_or_default();
                let body = [
                    format!("name = \"f{i}\""),
                    head.clone(),
                    tr.clone(),
                    format!("start_s = {start_s}"),
                    stop,
                    tcp.clone(),
                    rcv,
                ]
                .into_iter()
                .filter(|s| !s.is_empty())
                .collect::<Vec<_>>()
                .join("\n");
                Flow {
                    toml: format!("[[flows]]\n{body}\n"),
                    paths: paths.clone(),
                }
            })
        },
    )
}

/// A generated scenario: its text and, per flow, the goodput bound (Mbit/s).
#[derive(Clone, Debug)]
struct Generated {
    toml: String,
    bounds: Vec<(String, f64)>,
    mss_max: u32,
    /// With a warm-up, goodput counts bytes that crossed the bottleneck before it (held in the
    /// receiver's out-of-order queue), so the rate bound does not apply.
    warmup: bool,
}

fn scenario() -> impl Strategy<Value = Generated> {
    (1usize..4, 1usize..4, 1usize..4, 0.1f64..2.0, 0u64..1000, 0u8..4).prop_flat_map(
        |(n_links, n_paths, n_flows, dur, seed, hst)| {
            let duration = r3(dur);
            // hst: 0 none, 1 train, 2-3 train with a handover table (PHA, PHA-D).
            let (with_hst, with_table) = (hst >= 1, hst >= 2);
            let links = prop::collection::vec(link(), n_links);
            let paths = prop::collection::vec(prop::collection::vec(0..n_links, 1..=3), n_paths);
            let flows: Vec<_> = (0..n_flows)
                .map(|i| flow(i, n_paths, duration, with_hst, with_table))
                .collect();
            let sinr = prop::option::of((1.0f64..60.0, 1.0f64..500.0));
            let output = prop::option::of((1.0f64..1000.0, 0.0f64..0.5));
            // A node `mid` with a network element, which paths of two or more links go through.
            let element = prop_oneof![3 => Just(None), 1 => (1u32..20, 0.0f64..50.0).prop_map(Some)];
            let tables = (links, paths, flows, 0.0f64..3000.0, sinr, output, element);
            tables.prop_map(move |(mut links, paths, flows, start_m, sinr, output, element)| {
                let mut t = format!("seed = {seed}\nduration_s = {duration}\n");
                if let Some((bin, warm)) = output {
                    t.push_str(&format!(
                        "output = {{ bin_ms = {}, warmup_s = {} }}\n",
                        r3(bin),
                        r3(warm * duration)
                    ));
                }
                if let Some((n, delay)) = element {
                    t.push_str(
                        "[[nodes]]\nname = \"client\"\n[[nodes]]\nname = \"server\"\n[[nodes]]\nname = \"mid\"\n",
                    );
                    t.push_str(&format!(
                        "element = {{ kind = \"delay-every-nth\", n = {n}, delay_ms = {} }}\n",
                        r3(delay)
                    ));
                }
                for (i, l) in links.iter().enumerate() {
                    t.push_str(&format!("[[links]]\nname = \"l{i}\"\n{}\n", l.toml));
                }
                for (i, p) in paths.iter().enumerate() {
                    let names: Vec<String> = p.iter().map(|l| format!("\"l{l}\"")).collect();
                    t.push_str(&format!(
                        "[[paths]]\nname = \"p{i}\"\nlinks = [ {} ]\n",
                        names.join(", ")
                    ));
                    if element.is_some() && p.len() >= 2 {
                        t.push_str(&format!("via = [ {} ]\n", vec!["\"mid\""; p.len() - 1].join(", ")));
                    }
                }
                for f in &flows {
                    t.push_str(&f.toml);
                }
                if with_hst {
                    // Links driven by the train must not have outages of their own: pick those without.
                    let train: Vec<usize> = (0..links.len()).filter(|&i| !links[i].has_outages).take(2).collect();
                    let names: Vec<String> = train.iter().map(|i| format!("\"l{i}\"")).collect();
                    let table = if with_table { "table = \"table.csv\"\n" } else { "" };
                    t.push_str(&format!("[hst]\nlinks = [ {} ]\n{table}", names.join(", ")));
                    if let Some((max, period)) = sinr {
                        // The train's links then follow the serving cell's SINR, up to max_mbps.
                        t.push_str(&format!(
                            "radio = {{ capacity = {{ mode = \"sinr\", max_mbps = {}, period_ms = {} }} }}\n",
                            r3(max),
                            r3(period)
                        ));
                        for &i in &train {
                            links[i].peak_mbps = links[i].peak_mbps.max(r3(max));
                        }
                    }
                    t.push_str(&format!("[hst.train]\nstart_m = {}\n", r3(start_m)));
                }
                let bottleneck = |p: usize| {
                    paths[p]
                        .iter()
                        .map(|&l| links[l].peak_mbps)
                        .fold(f64::INFINITY, f64::min)
                };
                let bounds = flows
                    .iter()
                    .enumerate()
                    .map(|(i, f)| {
                        let mut ps = f.paths.clone();
                        ps.sort_unstable();
                        ps.dedup();
                        (format!("f{i}"), ps.iter().map(|&p| bottleneck(p)).sum::<f64>())
                    })
                    .collect();
                let mss_max = t
                    .match_indices("mss_bytes = ")
                    .map(|(k, _)| {
                        t[k + 12..]
                            .split([',', ' ', '}'])
                            .next()
                            .unwrap()
                            .parse::<u32>()
                            .unwrap()
                    })
                    .max()
                    .unwrap_or(1448);
                let warmup = output.is_some_and(|(_, w)| r3(w * duration) > 0.0);
                Generated {
                    toml: t,
                    bounds,
                    mss_max,
                    warmup,
                }
            })
        },
    )
}

thread_local! {
    /// Largest goodput / bound seen (printed: shows the bound is not vacuous).
    static RATIO: std::cell::Cell<f64> = const { std::cell::Cell::new(0.0) };
}

fn runner(cases: u32) -> TestRunner {
    let cfg = Config {
        cases,
        failure_persistence: None,
        ..Config::default()
    };
    TestRunner::new_with_rng(cfg, TestRng::deterministic_rng(RngAlgorithm::ChaCha))
}

fn num(v: &serde_json::Value, what: &str) -> f64 {
    v.as_f64().unwrap_or_else(|| panic!("{what} is not a number: {v}"))
}

/// Checks the run's summary against the generated scenario's bounds; Err(message) if violated.
fn check_run(g: &Generated, dir: &Path, twice: bool) -> Result<(), String> {
    let out = run_toml(&g.toml, "gen.toml", dir, None, None)
        .map_err(|e| format!("validated but run_toml refused it: {e:?}"))?;
    if twice {
        let again = run_toml(&g.toml, "gen.toml", dir, None, None).map_err(|e| format!("second run refused: {e:?}"))?;
        if again.summary != out.summary {
            return Err(format!(
                "two runs of the same scenario and seed differ:\n{}\n{}",
                out.summary, again.summary
            ));
        }
    }
    let duration: f64 = g
        .toml
        .lines()
        .find_map(|l| l.strip_prefix("duration_s = "))
        .unwrap()
        .parse()
        .unwrap();
    for (name, bound) in &g.bounds {
        let f = &out.summary["flows"][name.as_str()];
        let errors = num(&f["delivery_errors"], "delivery_errors");
        let (delivered, sent) = (
            num(&f["bytes_delivered"], "bytes_delivered"),
            num(&f["bytes_sent"], "bytes_sent"),
        );
        let goodput = num(&f["goodput_mbps"], "goodput_mbps");
        // Three of the largest packets more than the bottleneck could carry in the whole run.
        let slack = 3.0 * (g.mss_max + 52) as f64 * 8.0 / duration / 1e6;
        if errors != 0.0 {
            return Err(format!("flow {name}: {errors} delivery errors"));
        }
        if delivered > sent {
            return Err(format!("flow {name}: delivered {delivered} > sent {sent}"));
        }
        if g.warmup {
            continue;
        }
        RATIO.with(|r| r.set(r.get().max(goodput / bound)));
        if goodput > bound * 1.01 + slack {
            return Err(format!(
                "flow {name}: goodput {goodput} Mbit/s > bound {bound} (+1 % + {slack:.3})"
            ));
        }
    }
    Ok(())
}

/// Whenever a generated scenario validates, it runs, and its summary keeps the invariants. Also
/// guards the generator: at least 60 % of what it writes must be valid, or the property would
/// say little.
#[test]
fn every_scenario_that_validates_runs_within_its_invariants() {
    let dir = data_dir();
    let mut runner = runner(VALID_CASES);
    let (valid, total) = (std::cell::Cell::new(0u32), std::cell::Cell::new(0u32));
    let result = runner.run(&scenario(), |g| {
        total.set(total.get() + 1);
        let errs = validate_toml(&g.toml, "gen.toml", &dir);
        if !errs.is_empty() {
            return Ok(());
        }
        valid.set(valid.get() + 1);
        // Every fourth one twice: same scenario and seed, same summary (determinism).
        check_run(&g, &dir, valid.get() % 4 == 0)
            .map_err(|m| TestCaseError::fail(format!("{m}\n--- scenario ---\n{}", g.toml)))
    });
    if let Err(e) = result {
        panic!("{e}");
    }
    let (valid, total) = (valid.get(), total.get());
    eprintln!(
        "{valid} of {total} generated scenarios validated and ran; largest goodput/bound {:.3}",
        RATIO.with(|r| r.get())
    );
    assert!(
        valid * 10 >= total * 6,
        "only {valid} of {total} generated scenarios validate: the generator drifted from the format"
    );
}

/// A mutation that breaks a valid scenario: the field its error must name (a prefix), a fragment
/// of the message (or ""), and the mutation (None when it does not apply to this scenario).
type Mutation = (&'static str, &'static str, fn(&str) -> Option<String>);

/// Lines `[a, b)` of the entry whose line `header` (e.g. `name = "l0"`) names it: up to the
/// next line starting with `[`.
fn block(lines: &[&str], header: &str) -> Option<(usize, usize)> {
    let a = lines.iter().position(|l| *l == header)?;
    let b = lines[a + 1..]
        .iter()
        .position(|l| l.starts_with('['))
        .map_or(lines.len(), |k| a + 1 + k);
    Some((a, b))
}

/// Sets `key = value` in the entry named by `header`: replaces the key's line, or adds one.
fn set(t: &str, header: &str, key: &str, value: &str) -> Option<String> {
    let mut lines: Vec<&str> = t.lines().collect();
    let (a, b) = block(&lines, header)?;
    let line = format!("{key} = {value}");
    let prefix = format!("{key} = ");
    match (a..b).find(|&i| lines[i].starts_with(&prefix)) {
        Some(i) => lines[i] = &line,
        None => lines.insert(a + 1, &line),
    }
    Some(lines.join("\n") + "\n")
}

/// Removes `key` from the entry named by `header` (None if it has no such key).
fn remove(t: &str, header: &str, key: &str) -> Option<String> {
    let mut lines: Vec<&str> = t.lines().collect();
    let (a, b) = block(&lines, header)?;
    let i = (a..b).find(|&i| lines[i].starts_with(&format!("{key} = ")))?;
    lines.remove(i);
    Some(lines.join("\n") + "\n")
}

/// Sets a top-level key (they come first, before any table).
fn top(t: &str, key: &str, value: &str) -> Option<String> {
    let body = t
        .lines()
        .filter(|l| !l.starts_with(&format!("{key} = ")))
        .collect::<Vec<_>>()
        .join("\n");
    Some(format!("{key} = {value}\n{body}\n"))
}

const L0: &str = "name = \"l0\"";
const P0: &str = "name = \"p0\"";
const F0: &str = "name = \"f0\"";

const MUTATIONS: &[Mutation] = &[
    ("links[0].delay_ms", "[0, 3600000]", |t| set(t, L0, "delay_ms", "-1")),
    ("links[0].delay_ms", "[0, 3600000]", |t| set(t, L0, "delay_ms", "nan")),
    ("links[0].delay_ms", "[0, 3600000]", |t| set(t, L0, "delay_ms", "4e6")),
    ("links[0].delay_ms", "", |t| set(t, L0, "delay_ms", "\"20\"")),
    ("links[0].dealy_ms", "unknown field", |t| set(t, L0, "dealy_ms", "5")),
    ("links[0]", "missing field `delay_ms`", |t| remove(t, L0, "delay_ms")),
    ("links[0].rate_mbps", "> 0", |t| set(t, L0, "rate_mbps", "0")),
    ("links[0].rate_mbps", "> 0", |t| set(t, L0, "rate_mbps", "-5")),
    ("links[0].rate_mbps", "> 0", |t| set(t, L0, "rate_mbps", "inf")),
    ("links[0].rate_mbps", "1000000", |t| set(t, L0, "rate_mbps", "2e6")),
    ("links[0].queue_packets", "", |t| set(t, L0, "queue_packets", "0")),
    ("links[0].queue_bytes", "", |t| set(t, L0, "queue_bytes", "100")),
    ("links[0].loss.p", "[0, 1]", |t| {
        set(t, L0, "loss", "{ model = \"bernoulli\", p = 1.5 }")
    }),
    ("links[0].loss", "unknown variant", |t| {
        set(t, L0, "loss", "{ model = \"bernouli\", p = 0.1 }")
    }),
    ("links[0].loss.good.mean_s", "", |t| {
        set(t, L0, "loss", "{ model = \"gilbert-elliott\", p_good = 0, p_bad = 1, good = { sojourn = \"exponential\", mean_s = 0 }, bad = { sojourn = \"deterministic\", mean_s = 1 } }")
    }),
    ("links[0].reorder.p", "[0, 1]", |t| {
        set(t, L0, "reorder", "{ p = -0.1, extra_delay_ms = 5 }")
    }),
    ("links[0].outages", "overlap", |t| {
        set(
            t,
            L0,
            "outages",
            "[ { start_s = 0.1, duration_s = 0.2 }, { start_s = 0.2, duration_s = 0.1 } ]",
        )
    }),
    ("links[0].outages[0].duration_s", "", |t| {
        set(t, L0, "outages", "[ { start_s = 0.1, duration_s = 0 } ]")
    }),
    ("links[0].reverse.rate_mbps", "> 0", |t| {
        set(t, L0, "reverse", "{ rate_mbps = -1 }")
    }),
    ("links[0].name", "must not be empty", |t| {
        Some(t.replacen(L0, "name = \"\"", 1))
    }),
    ("links[", "duplicate link name", |t| {
        Some(format!("{t}[[links]]\nname = \"l0\"\nrate_mbps = 1\ndelay_ms = 1\n"))
    }),
    ("duration_s", "86400", |t| top(t, "duration_s", "0")),
    ("duration_s", "86400", |t| top(t, "duration_s", "-1")),
    ("duration_s", "86400", |t| top(t, "duration_s", "inf")),
    ("duration_s", "86400", |t| top(t, "duration_s", "1e9")),
    ("duration_s", "missing", |t| {
        Some(
            t.lines()
                .filter(|l| !l.starts_with("duration_s = "))
                .collect::<Vec<_>>()
                .join("\n"),
        )
    }),
    ("seed", "", |t| top(t, "seed", "-3")),
    ("durration_s", "unknown key", |t| top(t, "durration_s", "1")),
    ("paths[0].links[0]", "no link with this name", |t| {
        set(t, P0, "links", "[ \"nowhere\" ]")
    }),
    ("paths[0].links", "at least one link", |t| set(t, P0, "links", "[ ]")),
    ("paths[0].to", "must differ", |t| {
        set(t, P0, "from", "\"x\"").and_then(|t| set(&t, P0, "to", "\"x\""))
    }),
    ("flows[0].cc", "unknown congestion control", |t| {
        set(t, F0, "cc", "\"cubicc\"")
    }),
    ("flows[0].traffic", "", |t| {
        set(t, F0, "traffic", "{ kind = \"stream\" }")
    }),
    ("flows[0].traffic.bytes", "> 0", |t| {
        set(t, F0, "traffic", "{ kind = \"file\", bytes = 0 }")
    }),
    ("flows[0].traffic.rate_mbps", "(0, 1000000]", |t| {
        set(t, F0, "traffic", "{ kind = \"cbr\", rate_mbps = 0 }")
    }),
    ("flows[0].start_s", "[0, duration_s)", |t| set(t, F0, "start_s", "1e6")),
    ("flows[0].stop_s", "greater than start_s", |t| {
        set(t, F0, "stop_s", "-1")
    }),
    ("flows[0].tcp.mss_bytes", "[64, 9000]", |t| {
        set(t, F0, "tcp", "{ mss_bytes = 10 }")
    }),
    ("flows[0].tcp.initial_cwnd", "[1, 1000]", |t| {
        set(t, F0, "tcp", "{ initial_cwnd = 0 }")
    }),
    ("flows[0].receiver.delack_ms", "[1, 500]", |t| {
        set(t, F0, "receiver", "{ delack_ms = 0 }")
    }),
    ("flows[0].receiver.rcv_buf_bytes", "", |t| {
        set(t, F0, "receiver", "{ rcv_buf_bytes = 100 }")
    }),
    ("flows[0].path", "", |t| {
        set(t, F0, "path", "\"p0\"").and_then(|t| set(&t, F0, "paths", "[ \"p0\" ]"))
    }),
    ("flows[0].scheduler", "", |t| set(t, F0, "scheduler", "\"fastest\"")),
    ("flows[0].scheduler", "", |t| {
        set(t, F0, "scheduler", "{ name = \"minrtt\", num_segments = 3 }")
    }),
    ("flows[", "duplicate flow name", |t| {
        let lines: Vec<&str> = t.lines().collect();
        let (a, b) = block(&lines, F0)?;
        Some(format!("{t}[[flows]]\n{}\n", lines[a..b].join("\n")))
    }),
    ("flows", "missing", |t| Some(t.replace("[[flows]]", "[[flow]]"))),
    ("hst.radio.operators", "1 to 8", |t| {
        (!t.contains("[hst]")).then(|| format!("{t}[hst]\nlinks = [ \"l0\" ]\nradio = {{ operators = [] }}\n"))
    }),
];

/// Every mutation of a valid generated scenario gives errors (one naming the field, with the
/// expected message) from `validate_toml` and `run_toml` alike, without panicking.
#[test]
fn invalid_mutations_give_errors_never_panics() {
    let dir = data_dir();
    let mut runner = runner(MUTATION_CASES);
    let mut checked = vec![0u32; MUTATIONS.len()];
    for _ in 0..MUTATION_CASES {
        let g = scenario().new_tree(&mut runner).expect("generate").current();
        if !validate_toml(&g.toml, "gen.toml", &dir).is_empty() {
            continue;
        }
        for (j, (field, msg, mutate)) in MUTATIONS.iter().enumerate() {
            let Some(bad) = mutate(&g.toml) else { continue };
            let errs = validate_toml(&bad, "gen.toml", &dir);
            assert!(
                errs.iter()
                    .any(|e| e.field.starts_with(field) && e.message.contains(msg)),
                "mutation {j} should report `{field}` ({msg:?}), got {errs:#?}\n--- scenario ---\n{bad}"
            );
            let run = run_toml(&bad, "gen.toml", &dir, None, None);
            assert!(
                matches!(&run, Err(e) if *e == errs),
                "run_toml must refuse it with the same errors\n{bad}"
            );
            checked[j] += 1;
        }
    }
    eprintln!("mutations checked: {checked:?}");
    let unused: Vec<usize> = (0..MUTATIONS.len()).filter(|&j| checked[j] == 0).collect();
    assert!(unused.is_empty(), "mutations never applied: {unused:?}");
}

/// The `scenario` fuzz target's dictionary (crates/sim/fuzz/scenario.dict) lists every key of
/// the scenario format, so a new key is fuzzed as soon as it exists.
#[test]
fn fuzz_dictionary_lists_every_scenario_key() {
    let dict = include_str!("../fuzz/scenario.dict");
    let schema: serde_json::Value = serde_json::from_str(&mobipath_sim::api::schema_json()).unwrap();
    let mut keys = Vec::new();
    fn walk(v: &serde_json::Value, keys: &mut Vec<String>) {
        match v {
            serde_json::Value::Object(m) => {
                if let Some(serde_json::Value::Object(props)) = m.get("properties") {
                    keys.extend(props.keys().cloned());
                }
                m.values().for_each(|x| walk(x, keys));
            }
            serde_json::Value::Array(a) => a.iter().for_each(|x| walk(x, keys)),
            _ => {}
        }
    }
    walk(&schema, &mut keys);
    assert!(keys.len() > 50, "schema walk found only {keys:?}");
    let missing: Vec<&String> = keys.iter().filter(|k| !dict.contains(&format!("\"{k} = \""))).collect();
    assert!(
        missing.is_empty(),
        "keys missing from crates/sim/fuzz/scenario.dict: {missing:?}"
    );
}
