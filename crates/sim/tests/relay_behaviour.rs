//! Split-connection relays (P2's MPTCP router and proxy): bytes conserved end to end through
//! loss, outages and a full relay buffer; a full buffer closes the upstream window; aggregation
//! through the chain.
mod common;
use common::{f, flow, run, run_seed};

/// client —LAN— router —operator A, operator B (MPTCP)— proxy —Internet— server, upload.
/// `ops` are the tunnel's paths, `a_extra`/`b_extra` extra lines of the operators' links,
/// `traffic` the client's application, `buffer` both relays' buffer.
fn chain(duration: f64, ops: &str, a_extra: &str, b_extra: &str, traffic: &str, buffer: u64, cc: &str) -> String {
    format!(
        r#"
seed = 1
duration_s = {duration}
[[nodes]]
name = "client"
[[nodes]]
name = "router"
[[nodes]]
name = "proxy"
[[nodes]]
name = "server"
[[links]]
name = "lan"
rate_mbps = 100
delay_ms = 1
queue_packets = 200
[[links]]
name = "op-a"
rate_mbps = 20
delay_ms = 12.9
queue_packets = 100
{a_extra}
[[links]]
name = "op-b"
rate_mbps = 20
delay_ms = 20.1
queue_packets = 100
{b_extra}
[[links]]
name = "inet"
rate_mbps = 100
delay_ms = 5
queue_packets = 200
[[paths]]
name = "lan"
from = "client"
to = "router"
links = ["lan"]
[[paths]]
name = "a"
from = "router"
to = "proxy"
links = ["op-a"]
[[paths]]
name = "b"
from = "router"
to = "proxy"
links = ["op-b"]
[[paths]]
name = "inet"
from = "proxy"
to = "server"
links = ["inet"]
[[flows]]
name = "client"
path = "lan"
cc = "cubic"
traffic = {traffic}
[[flows]]
name = "tunnel"
paths = [{ops}]
cc = "{cc}"
traffic = {{ kind = "relay", from = "client", buffer_bytes = {buffer} }}
[[flows]]
name = "server"
path = "inet"
cc = "cubic"
traffic = {{ kind = "relay", from = "tunnel", buffer_bytes = {buffer} }}
"#
    )
}

const BULK: &str = "{ kind = \"bulk\" }";

/// The same MPTCP connection between router and proxy with nobody in front or behind.
fn tunnel_alone(duration: f64, ops: &str, cc: &str) -> String {
    let c = chain(duration, ops, "", "", BULK, 1 << 22, cc);
    let start = c.find("[[flows]]").unwrap();
    format!(
        "{}[[flows]]\nname = \"tunnel\"\npaths = [{ops}]\ncc = \"{cc}\"\ntraffic = {{ kind = \"bulk\" }}\n",
        &c[..start]
    )
}

#[test]
fn the_chain_aggregates_two_operators_like_the_bare_mptcp_connection() {
    let two = run(&chain(30.0, "\"a\", \"b\"", "", "", BULK, 1 << 22, "cubic"));
    let one = run(&chain(30.0, "\"a\"", "", "", BULK, 1 << 22, "cubic"));
    let bare = run(&tunnel_alone(30.0, "\"a\", \"b\"", "cubic"));
    let (g2, g1, gb) = (
        f(&flow(&two, "server")["goodput_mbps"]),
        f(&flow(&one, "server")["goodput_mbps"]),
        f(&flow(&bare, "tunnel")["goodput_mbps"]),
    );
    println!("end to end: two operators {g2:.2}, one {g1:.2}; bare MPTCP {gb:.2} Mbit/s");
    assert!(g2 >= 1.7 * g1, "two operators {g2} vs one {g1}");
    assert!((g2 / gb - 1.0).abs() <= 0.05, "through the relays {g2} vs bare {gb}");
    // Every leg carries the same stream.
    for leg in ["client", "tunnel", "server"] {
        assert_eq!(f(&flow(&two, leg)["delivery_errors"]), 0.0, "{leg}");
    }
    assert_eq!(flow(&two, "tunnel")["relay_from"], "client");
    assert_eq!(flow(&two, "server")["relay_from"], "tunnel");
}

/// A file crosses both relays exactly once and in order, through random loss on one operator,
/// an outage on the other and relay buffers far smaller than the file; the completion time of
/// the last leg is the end-to-end one.
#[test]
fn every_byte_crosses_both_relays_exactly_once() {
    // A 3000-byte relay buffer lets about 3000 bytes through per round trip (0.6 Mbit/s here),
    // so that case moves a smaller file.
    for (seed, buffer, cc, file) in [
        (1, 65_536u64, "cubic", 8_000_000u64),
        (2, 20_000, "lia", 8_000_000),
        (3, 1_000_000, "reno", 8_000_000),
        (4, 3_000, "bbr", 1_000_000),
    ] {
        let sc = chain(
            60.0,
            "\"a\", \"b\"",
            "loss = { model = \"bernoulli\", p = 0.01 }",
            "outages = [{ start_s = 1.0, duration_s = 2.0 }]",
            &format!("{{ kind = \"file\", bytes = {file} }}"),
            buffer,
            cc,
        );
        let o = run_seed(&sc, seed);
        for leg in ["client", "tunnel", "server"] {
            let fl = flow(&o, leg);
            assert_eq!(f(&fl["delivery_errors"]), 0.0, "{leg} {fl}");
            assert_eq!(
                f(&fl["bytes_delivered"]),
                file as f64,
                "{leg} (buffer {buffer}, {cc}): {fl}"
            );
        }
        let (t_client, t_server) = (f(&flow(&o, "client")["fct_s"]), f(&flow(&o, "server")["fct_s"]));
        assert!(
            t_server > t_client,
            "the last byte reaches the server after it left the client"
        );
        for leg in ["tunnel", "server"] {
            let max = f(&flow(&o, leg)["relay_buffer_max_bytes"]);
            assert!(
                max > 0.0 && max <= buffer as f64,
                "{leg}: relay buffer {max} of {buffer}"
            );
        }
    }
}

/// A slow operator behind a fast LAN: the relay buffer fills and the relay stops reading, so the
/// client's window closes and it sends only as fast as the operator drains — instead of the relay
/// dropping or buffering without bound. Without the bound (a buffer as large as the run's data)
/// the client would run at LAN speed.
#[test]
fn a_full_relay_buffer_closes_the_upstream_window() {
    let slow = |buffer: u64| {
        chain(20.0, "\"a\"", "", "", BULK, buffer, "cubic")
            .replace("rate_mbps = 20\ndelay_ms = 12.9", "rate_mbps = 5\ndelay_ms = 12.9")
            .replace(
                "traffic = { kind = \"bulk\" }\n",
                "traffic = { kind = \"bulk\" }\nreceiver = { rcv_buf_bytes = 262144 }\n",
            )
    };
    let buffer = 131_072u64;
    let o = run(&slow(buffer));
    let (client, tunnel) = (flow(&o, "client"), flow(&o, "tunnel"));
    let (gc, gt) = (f(&client["goodput_mbps"]), f(&tunnel["goodput_mbps"]));
    println!("client {gc:.3} Mbit/s, tunnel {gt:.3} Mbit/s");
    assert!(gt > 4.0 && gt < 5.0, "the operator carries about its 5 Mbit/s: {gt}");
    // What the client got through is what the tunnel carried plus at most the two buffers
    // (the relay's and the router's receive buffer) over the 20 s.
    let slack = (buffer + 262_144) as f64 * 8.0 / 20.0 / 1e6;
    assert!(gc <= gt + slack + 0.05, "client {gc} vs tunnel {gt} + {slack}");
    assert!(f(&tunnel["relay_buffer_max_bytes"]) <= buffer as f64);
    // The window, not the LAN's queue, held the client back: its RTT stays near the LAN's
    // 2 ms (its 200-packet queue, full, would add 24 ms).
    assert!(f(&client["mean_rtt_ms"]) < 5.0, "{client}");
    assert_eq!(f(&o.summary["links"]["lan.forward"]["drops"]), 0.0);
    // Unbounded (a buffer larger than what crosses in 20 s): the client runs at LAN speed.
    let o = run(&slow(1 << 30));
    assert!(f(&flow(&o, "client")["goodput_mbps"]) > 50.0);
}

#[test]
fn bad_relays_are_refused_with_the_field() {
    let good = chain(5.0, "\"a\", \"b\"", "", "", BULK, 65_536, "cubic");
    let check = |from: &str, to: &str, want: &str| {
        let text = good.replacen(from, to, 1);
        let errs: Vec<String> = mobipath_sim::api::validate_toml(&text, "r.toml", std::path::Path::new("."))
            .into_iter()
            .map(|e| e.to_string())
            .collect();
        assert!(errs.iter().any(|e| e.contains(want)), "{to}: {errs:?}");
    };
    check(
        "from = \"client\", buffer_bytes",
        "from = \"nobody\", buffer_bytes",
        "flows[1].traffic.from",
    );
    check(
        "from = \"client\", buffer_bytes",
        "from = \"tunnel\", buffer_bytes",
        "cannot relay itself",
    );
    check(
        "from = \"tunnel\", buffer_bytes",
        "from = \"client\", buffer_bytes",
        "one relay per incoming flow",
    );
    check(
        "buffer_bytes = 65536 }\n[[flows]]",
        "buffer_bytes = 0 }\n[[flows]]",
        "flows[1].traffic.buffer_bytes",
    );
    // The relay must sit where the input ends: the tunnel's paths start at the router.
    check(
        "name = \"inet\"\nfrom = \"proxy\"",
        "name = \"inet\"\nfrom = \"router\"",
        "the relay must sit where flow tunnel ends",
    );
    // A cycle: the client relays the server.
    check(
        "cc = \"cubic\"\ntraffic = { kind = \"bulk\" }",
        "cc = \"cubic\"\ntraffic = { kind = \"relay\", from = \"server\" }",
        "cycle",
    );
}

/// The download direction (server → proxy → router → client, MPTCP between proxy and router) and
/// two client connections through one router, each relayed over its own MPTCP connection (as
/// OpenMPTCProuter does): both complete exactly once, sharing the operators.
#[test]
fn download_and_two_clients_through_one_router() {
    // Download: reverse every path's direction and the flows' order.
    let down = chain(20.0, "\"a\", \"b\"", "", "", BULK, 1 << 20, "cubic")
        .replace("from = \"client\"\nto = \"router\"", "from = \"router\"\nto = \"client\"")
        .replace("from = \"router\"\nto = \"proxy\"", "from = \"proxy\"\nto = \"router\"")
        .replace("from = \"proxy\"\nto = \"server\"", "from = \"server\"\nto = \"proxy\"")
        .replace("name = \"client\"\npath = \"lan\"\ncc = \"cubic\"\ntraffic = { kind = \"bulk\" }", "name = \"client\"\npath = \"lan\"\ncc = \"cubic\"\ntraffic = { kind = \"relay\", from = \"tunnel\" }")
        .replace("traffic = { kind = \"relay\", from = \"client\", buffer_bytes = 1048576 }", "traffic = { kind = \"relay\", from = \"server\", buffer_bytes = 1048576 }")
        .replace("name = \"server\"\npath = \"inet\"\ncc = \"cubic\"\ntraffic = { kind = \"relay\", from = \"tunnel\", buffer_bytes = 1048576 }", "name = \"server\"\npath = \"inet\"\ncc = \"cubic\"\ntraffic = { kind = \"bulk\" }");
    let o = run(&down);
    let g = f(&flow(&o, "client")["goodput_mbps"]);
    assert!(g > 35.0, "download end to end {g}");
    assert_eq!(flow(&o, "tunnel")["relay_from"], "server");
    assert_eq!(flow(&o, "client")["relay_from"], "tunnel");
    for leg in ["client", "tunnel", "server"] {
        assert_eq!(f(&flow(&o, leg)["delivery_errors"]), 0.0, "{leg}");
    }
    // Two clients, each with its own tunnel and server leg, through the same router and proxy.
    let one = chain(
        20.0,
        "\"a\", \"b\"",
        "",
        "",
        "{ kind = \"file\", bytes = 20000000 }",
        1 << 20,
        "cubic",
    );
    let start = one.find("[[flows]]").unwrap();
    let second = one[start..]
        .replace("name = \"client\"", "name = \"client2\"")
        .replace("name = \"tunnel\"", "name = \"tunnel2\"")
        .replace("name = \"server\"", "name = \"server2\"")
        .replace("from = \"client\"", "from = \"client2\"")
        .replace("from = \"tunnel\"", "from = \"tunnel2\"");
    let o = run(&format!("{one}{second}"));
    let (a, b) = (f(&flow(&o, "server")["fct_s"]), f(&flow(&o, "server2")["fct_s"]));
    for leg in ["server", "server2"] {
        assert_eq!(f(&flow(&o, leg)["bytes_delivered"]), 20e6, "{leg}");
    }
    // 40 MB over ~40 Mbit/s of operators: together about 8 s, each not much faster than that.
    assert!(a > 6.0 && b > 6.0 && a.max(b) < 12.0, "completion {a} s and {b} s");
}
