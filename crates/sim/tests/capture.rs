//! Packet captures (`mobipath_sim::capture`): what the files hold against the summary, that they
//! leave the simulation itself untouched, determinism, the size limit and bad input. Wireshark's
//! reading of the files is tested with tshark in tests/python/test_pcap.py.
use mobipath_sim::api::{run_toml, run_toml_capturing, CaptureRequest};
use mobipath_sim::capture::HANDSHAKE_COMMENT;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};

/// MPTCP over two paths, one lossy with a short queue (wire and queue drops), one with a
/// handover-like outage.
const MPTCP: &str = r#"
duration_s = 4
seed = 3
[[links]]
name = "wifi"
rate_mbps = 20
delay_ms = 10
queue_packets = 20
loss = { model = "bernoulli", p = 0.01 }
[[links]]
name = "lte"
rate_mbps = 10
delay_ms = 25
queue_packets = 60
outages = [{ start_s = 2.0, duration_s = 0.3 }]
[[paths]]
name = "a"
links = ["wifi"]
[[paths]]
name = "b"
links = ["lte"]
[[flows]]
name = "m"
paths = ["a", "b"]
cc = "lia"
scheduler = "minrtt"
traffic = { kind = "bulk" }
"#;

/// The MPTCP scenario with `lines` in its `[output]` table.
fn with_output(lines: &str) -> String {
    MPTCP.replacen("[[links]]", &format!("[output]\n{lines}\n[[links]]"), 1)
}

fn temp_dir(tag: &str) -> PathBuf {
    static N: AtomicUsize = AtomicUsize::new(0);
    let n = N.fetch_add(1, Ordering::SeqCst);
    let d = std::env::temp_dir().join(format!("mobipath-capture-{tag}-{}-{n}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn run_capturing(text: &str, seed: Option<u64>, req: &CaptureRequest) -> Value {
    match run_toml_capturing(text, "t.toml", Path::new("."), seed, None, req) {
        Ok(o) => o.summary,
        Err(e) => panic!("{e:?}"),
    }
}

fn all_links(dir: &Path) -> CaptureRequest {
    CaptureRequest {
        out_dir: Some(dir.to_path_buf()),
        force: true,
        max_mb: None,
    }
}

/// The enhanced packet blocks of a pcapng file: (timestamp ns, captured bytes, original length,
/// comment).
fn packets(path: &Path) -> Vec<(u64, Vec<u8>, u32, Option<String>)> {
    let b = std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let u32_at = |i: usize| u32::from_le_bytes(b[i..i + 4].try_into().unwrap());
    let mut i = 0;
    let mut out = Vec::new();
    while i < b.len() {
        let (kind, len) = (u32_at(i), u32_at(i + 4) as usize);
        assert_eq!(u32_at(i + len - 4) as usize, len, "trailing length");
        if kind == 6 {
            let ts = ((u32_at(i + 12) as u64) << 32) | u32_at(i + 16) as u64;
            let cap = u32_at(i + 20) as usize;
            let orig = u32_at(i + 24);
            let data = b[i + 28..i + 28 + cap].to_vec();
            let mut o = i + 28 + cap.div_ceil(4) * 4;
            let mut comment = None;
            while o < i + len - 4 {
                let code = u16::from_le_bytes([b[o], b[o + 1]]);
                let l = u16::from_le_bytes([b[o + 2], b[o + 3]]) as usize;
                if code == 1 {
                    comment = Some(String::from_utf8(b[o + 4..o + 4 + l].to_vec()).unwrap());
                }
                if code == 0 {
                    break;
                }
                o += 4 + l.div_ceil(4) * 4;
            }
            out.push((ts, data, orig, comment));
        }
        i += len;
    }
    out
}

fn is_handshake(c: &Option<String>) -> bool {
    c.as_deref() == Some(HANDSHAKE_COMMENT)
}

#[test]
fn files_hold_every_delivered_and_dropped_packet_and_change_nothing() {
    let dir = temp_dir("counts");
    let with = run_capturing(MPTCP, None, &all_links(&dir));
    let without = run_toml(MPTCP, "t.toml", Path::new("."), None, None).unwrap().summary;
    // The simulation is the same with and without capture: only the `pcap` section differs.
    let mut stripped = with.clone();
    stripped.as_object_mut().unwrap().remove("pcap");
    assert_eq!(stripped, without);

    let pcap = &with["pcap"];
    assert!(pcap.get("warning").is_none(), "{pcap}");
    let mut drops_seen = 0;
    for (name, link) in with["links"].as_object().unwrap() {
        let file = dir.join("pcap").join(format!("{name}.pcapng"));
        let pk = packets(&file);
        let simulated = pk.iter().filter(|p| !is_handshake(&p.3)).count() as u64;
        assert_eq!(simulated, link["packets_delivered"].as_u64().unwrap(), "{name}");
        assert_eq!(pcap["files"][name]["packets"].as_u64().unwrap(), simulated);
        assert!(pk.windows(2).all(|w| w[0].0 <= w[1].0), "{name}: time order");
        // Snap length 128: every packet cut there or whole, its original length kept.
        for (_, data, orig, _) in &pk {
            assert_eq!(data.len() as u32, (*orig).min(128));
            assert_eq!(
                u16::from_be_bytes([data[2], data[3]]) as u32,
                *orig,
                "IPv4 total length"
            );
        }
        let drops = link["drops"].as_u64().unwrap();
        let drops_file = dir.join("pcap").join(format!("{name}.drops.pcapng"));
        if drops > 0 {
            let d = packets(&drops_file);
            assert_eq!(d.len() as u64, drops, "{name}");
            assert!(d
                .iter()
                .all(|p| p.3.as_deref().is_some_and(|c| c.starts_with("dropped: "))));
            drops_seen += drops;
        } else {
            assert!(!drops_file.exists(), "{name}: no drops, no drops file");
        }
    }
    assert!(drops_seen > 0, "the scenario drops packets");
    // The handshake: SYN, SYN/ACK and third ACK at the head of both files of the connection's
    // first subflow only (path a, link wifi).
    let hs = |name: &str| pcap["files"][name]["handshake_packets"].as_u64().unwrap();
    assert_eq!((hs("wifi.forward"), hs("wifi.reverse")), (3, 3));
    assert_eq!((hs("lte.forward"), hs("lte.reverse")), (0, 0));
    // The outage's start is announced on the first packet after it.
    let lte = packets(&dir.join("pcap/lte.forward.pcapng"));
    let first_after = lte.iter().find(|p| p.0 >= 2_000_000_000).unwrap();
    assert!(first_after
        .3
        .as_deref()
        .unwrap()
        .contains("outage on link lte from 2.000000 s"));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn same_seed_same_bytes_and_another_seed_other_bytes() {
    let (a, b, c) = (temp_dir("seed-a"), temp_dir("seed-b"), temp_dir("seed-c"));
    run_capturing(MPTCP, Some(5), &all_links(&a));
    run_capturing(MPTCP, Some(5), &all_links(&b));
    run_capturing(MPTCP, Some(6), &all_links(&c));
    for f in [
        "wifi.forward.pcapng",
        "wifi.reverse.pcapng",
        "lte.forward.pcapng",
        "wifi.forward.drops.pcapng",
    ] {
        let read = |d: &Path| std::fs::read(d.join("pcap").join(f)).unwrap();
        assert!(read(&a) == read(&b), "{f} differs between two runs of seed 5");
        assert!(read(&a) != read(&c), "{f} is the same for seeds 5 and 6");
    }
    for d in [a, b, c] {
        let _ = std::fs::remove_dir_all(d);
    }
}

#[test]
fn scenario_list_taps_only_those_links() {
    let dir = temp_dir("list");
    let text = with_output("pcap = [\"lte\"]").replace("duration_s = 4", "duration_s = 2.5");
    let req = CaptureRequest {
        out_dir: Some(dir.clone()),
        force: true, // --pcap keeps the scenario's list
        max_mb: None,
    };
    let s = run_capturing(&text, None, &req);
    let files: Vec<&String> = s["pcap"]["files"].as_object().unwrap().keys().collect();
    assert_eq!(files, ["lte.forward", "lte.reverse"]);
    assert!(!dir.join("pcap/wifi.forward.pcapng").exists());
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn size_limit_stops_the_capture_with_a_warning() {
    let dir = temp_dir("limit");
    let req = CaptureRequest {
        out_dir: Some(dir.clone()),
        force: true,
        max_mb: Some(0.05),
    };
    let s = run_capturing(MPTCP, None, &req);
    let warning = s["pcap"]["warning"].as_str().expect("a warning");
    assert!(warning.contains("size limit"), "{warning}");
    let total: u64 = std::fs::read_dir(dir.join("pcap"))
        .unwrap()
        .map(|e| e.unwrap().metadata().unwrap().len())
        .sum();
    assert!(total <= 50_000, "{total} bytes on disk");
    assert_eq!(total, s["pcap"]["bytes_written"].as_u64().unwrap());
    assert!(total > 40_000, "stops near the limit, not at once ({total})");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn bad_capture_input_is_refused_before_the_run() {
    let err = |text: &str, req: &CaptureRequest| -> String {
        match run_toml_capturing(text, "t.toml", Path::new("."), None, None, req) {
            Ok(_) => panic!("accepted"),
            Err(e) => e.iter().map(|e| e.to_string()).collect::<Vec<_>>().join("\n"),
        }
    };
    let dir = temp_dir("bad");
    let ok = all_links(&dir);
    let unknown = with_output("pcap = [\"wifi\", \"wlan\"]");
    let e = err(&unknown, &ok);
    assert!(
        e.contains("output.pcap[1]") && e.contains("wlan") && e.contains("unknown link"),
        "{e}"
    );
    let zero = with_output("pcap = true\npcap_max_mb = 0");
    let e = err(&zero, &ok);
    assert!(e.contains("output.pcap_max_mb") && e.contains("(0, 1000000]"), "{e}");
    let e = err(
        MPTCP,
        &CaptureRequest {
            max_mb: Some(0.0),
            ..ok.clone()
        },
    );
    assert!(e.contains("--pcap-max-mb"), "{e}");
    let snap = with_output("pcap_snaplen = 40");
    assert!(err(&snap, &ok).contains("output.pcap_snaplen"));
    // A directory that cannot be written: a regular file stands where `pcap/` must go.
    std::fs::write(dir.join("pcap"), b"in the way").unwrap();
    let e = err(MPTCP, &ok);
    assert!(e.contains("cannot write the capture there"), "{e}");
    // A scenario asking for captures with nowhere to put them.
    let asks = with_output("pcap = true");
    assert!(err(&asks, &CaptureRequest::default()).contains("output directory"));
    let _ = std::fs::remove_dir_all(&dir);
}

/// Development aid: `MOBIPATH_PCAP_KEEP=DIR cargo test --test capture keep -- --ignored` writes
/// the MPTCP example's captures to DIR.
#[test]
#[ignore]
fn keep() {
    let dir = PathBuf::from(std::env::var("MOBIPATH_PCAP_KEEP").expect("MOBIPATH_PCAP_KEEP"));
    std::fs::create_dir_all(&dir).unwrap();
    let s = run_capturing(MPTCP, None, &all_links(&dir));
    println!("{}", serde_json::to_string_pretty(&s["pcap"]).unwrap());
}
