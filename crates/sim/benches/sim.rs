//! `cargo bench -p mobipath-sim`: wall time of the fixed benchmark scenarios in `scenarios/bench/`.
//! (`mobipath bench` reports the same scenarios with events/s and peak memory.)
use criterion::{criterion_group, criterion_main, Criterion};
use mobipath_sim::api::run_toml;
use std::path::Path;

fn scenario(name: &str) -> (String, std::path::PathBuf) {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios/bench");
    let text = std::fs::read_to_string(dir.join(name)).expect("bench scenario exists");
    (text, dir)
}

fn benches(c: &mut Criterion) {
    let mut g = c.benchmark_group("scenarios");
    g.sample_size(10);
    for name in [
        "cubic-100mbps-60s.toml",
        "mptcp-lia-minrtt-2x25mbps-70s.toml",
        "lte-p4-20ue-60s.toml",
    ] {
        let (text, dir) = scenario(name);
        g.bench_function(name, |b| {
            b.iter(|| run_toml(&text, name, &dir, None, None).expect("valid"));
        });
    }
    g.finish();
}

criterion_group!(all, benches);
criterion_main!(all);
