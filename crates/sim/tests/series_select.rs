//! `[output] series`: which time series a run keeps, and that the summary does not depend on it.
mod common;
use common::run;
use mobipath_sim::api::{Column, RunOutput};
use mobipath_sim::metrics::select::AUTO_ALL_MAX_FLOWS;

/// `n` bulk flows (alternately NewReno and CUBIC, one MPTCP flow when `mptcp`) and a relay
/// chain, sharing one link; `series` is the `[output] series` value as TOML (or nothing).
fn scenario(n: usize, series: Option<&str>) -> String {
    let mut s = String::from(
        "seed = 3\nduration_s = 2.05\n\
         [[nodes]]\nname = \"client\"\n[[nodes]]\nname = \"server\"\n[[nodes]]\nname = \"c\"\n[[nodes]]\nname = \"r\"\n[[nodes]]\nname = \"s\"\n\
         [[links]]\nname = \"l\"\nrate_mbps = 50\ndelay_ms = 10\nqueue_packets = 100\n\
         [[links]]\nname = \"m\"\nrate_mbps = 20\ndelay_ms = 5\nqueue_packets = 50\n\
         [[links]]\nname = \"x\"\nrate_mbps = 30\ndelay_ms = 2\nqueue_packets = 100\n\
         [[links]]\nname = \"y\"\nrate_mbps = 10\ndelay_ms = 8\nqueue_packets = 100\n\
         [[paths]]\nname = \"p\"\nlinks = [\"l\"]\n[[paths]]\nname = \"q\"\nlinks = [\"m\"]\n\
         [[paths]]\nname = \"in\"\nlinks = [\"x\"]\nfrom = \"c\"\nto = \"r\"\n\
         [[paths]]\nname = \"out\"\nlinks = [\"y\"]\nfrom = \"r\"\nto = \"s\"\n",
    );
    if let Some(v) = series {
        s.push_str(&format!("[output]\nbin_ms = 100\nseries = {v}\n"));
    }
    for i in 0..n {
        let cc = if i % 2 == 0 { "newreno" } else { "cubic" };
        s.push_str(&format!(
            "[[flows]]\nname = \"f{i}\"\npath = \"p\"\ncc = \"{cc}\"\ntraffic = {{ kind = \"bulk\" }}\n"
        ));
    }
    s.push_str(
        "[[flows]]\nname = \"mp\"\npaths = [\"p\", \"q\"]\ncc = \"lia\"\ntraffic = { kind = \"bulk\" }\n\
         [[flows]]\nname = \"a\"\npath = \"in\"\ncc = \"cubic\"\ntraffic = { kind = \"file\", bytes = 2000000 }\n\
         [[flows]]\nname = \"b\"\npath = \"out\"\ncc = \"cubic\"\ntraffic = { kind = \"relay\", from = \"a\", buffer_bytes = 100000 }\n",
    );
    s
}

fn str_col<'a>(o: &'a RunOutput, name: &str) -> &'a [String] {
    match &o.timeseries.columns.iter().find(|(n, _)| n == name).expect("column").1 {
        Column::Str(v) => v,
        Column::F64(_) => panic!("{name} is not text"),
    }
}

fn f64_col<'a>(o: &'a RunOutput, name: &str) -> &'a [f64] {
    match &o.timeseries.columns.iter().find(|(n, _)| n == name).expect("column").1 {
        Column::F64(v) => v,
        Column::Str(_) => panic!("{name} is not numeric"),
    }
}

/// (kind, name, metric) → values, in row order.
fn series(o: &RunOutput) -> Vec<((String, String, String), Vec<f64>)> {
    let (k, n, m, v) = (
        str_col(o, "kind"),
        str_col(o, "name"),
        str_col(o, "metric"),
        f64_col(o, "value"),
    );
    let mut out: Vec<((String, String, String), Vec<f64>)> = Vec::new();
    for i in 0..v.len() {
        let key = (k[i].clone(), n[i].clone(), m[i].clone());
        match out.last_mut() {
            Some((last, vals)) if *last == key => vals.push(v[i]),
            _ => out.push((key, vec![v[i]])),
        }
    }
    out
}

#[test]
fn every_choice_gives_the_same_summary_and_events() {
    let all = run(&scenario(4, Some("\"all\"")));
    for sel in ["\"auto\"", "\"aggregate\"", "\"none\"", "[\"f1\", \"mp\"]"] {
        let o = run(&scenario(4, Some(sel)));
        assert_eq!(o.summary, all.summary, "series = {sel}");
        assert_eq!(o.events, all.events, "series = {sel}");
    }
    // Leaving `series` out is "auto", which is "all" for a few flows: the same table too.
    let default = run(&scenario(4, None));
    assert_eq!(series(&default), series(&run(&scenario(4, Some("\"auto\"")))));
    assert!(
        default.summary["flows"]["b"]["relay_buffer_mean_bytes"]
            .as_f64()
            .unwrap()
            > 0.0
    );
}

#[test]
fn aggregate_keeps_the_links_and_the_sum_over_flows() {
    let all = run(&scenario(4, Some("\"all\"")));
    let agg = run(&scenario(4, Some("\"aggregate\"")));
    let full = series(&all);
    let kept = series(&agg);
    let kinds: Vec<&str> = kept.iter().map(|((k, _, _), _)| k.as_str()).collect();
    assert!(kinds.iter().all(|k| *k == "link" || *k == "total"), "{kinds:?}");
    for ((k, n, m), v) in &kept {
        if k == "link" {
            let same = full.iter().find(|(key, _)| key == &(k.clone(), n.clone(), m.clone()));
            assert_eq!(same.map(|(_, v)| v), Some(v), "{k} {n} {m}");
        }
    }
    for metric in ["goodput_mbps", "throughput_mbps"] {
        let total = &kept
            .iter()
            .find(|((k, n, m), _)| k == "total" && n == "flows" && m == metric)
            .unwrap_or_else(|| panic!("total {metric}"))
            .1;
        let flows: Vec<&Vec<f64>> = full
            .iter()
            .filter(|((k, _, m), _)| k == "flow" && m == metric)
            .map(|(_, v)| v)
            .collect();
        assert_eq!(flows.len(), 7);
        assert_eq!(total.len(), flows[0].len());
        for (b, t) in total.iter().enumerate() {
            let sum: f64 = flows.iter().map(|v| v[b]).sum();
            assert!((t - sum).abs() <= 1e-9 * sum.max(1.0), "bin {b}: {t} vs {sum}");
        }
        assert!(total.iter().any(|&t| t > 0.0));
    }
}

#[test]
fn a_list_keeps_those_flows_and_none_keeps_nothing() {
    let all = series(&run(&scenario(4, Some("\"all\""))));
    let some = series(&run(&scenario(4, Some("[\"f1\", \"mp\"]"))));
    let names: std::collections::BTreeSet<(String, String)> =
        some.iter().map(|((k, n, _), _)| (k.clone(), n.clone())).collect();
    let want: std::collections::BTreeSet<(String, String)> = [
        ("flow", "f1"),
        ("flow", "mp"),
        ("subflow", "mp/p"),
        ("subflow", "mp/q"),
        ("link", "l.forward"),
        ("link", "l.reverse"),
        ("link", "m.forward"),
        ("link", "m.reverse"),
        ("link", "x.forward"),
        ("link", "x.reverse"),
        ("link", "y.forward"),
        ("link", "y.reverse"),
    ]
    .iter()
    .map(|(k, n)| (k.to_string(), n.to_string()))
    .collect();
    assert_eq!(names, want);
    for (key, v) in &some {
        assert_eq!(all.iter().find(|(k, _)| k == key).map(|(_, v)| v), Some(v), "{key:?}");
    }
    let none = run(&scenario(4, Some("\"none\"")));
    assert_eq!(f64_col(&none, "value").len(), 0);
    assert_eq!(none.timeseries.columns.len(), 5);
}

#[test]
fn auto_drops_the_flows_series_above_the_limit() {
    let o = run(&scenario(AUTO_ALL_MAX_FLOWS, None)); // + 3 flows of the relay and MPTCP
    let kinds: std::collections::BTreeSet<String> = series(&o).into_iter().map(|((k, _, _), _)| k).collect();
    assert_eq!(kinds, ["link", "total"].iter().map(|s| s.to_string()).collect());
}
