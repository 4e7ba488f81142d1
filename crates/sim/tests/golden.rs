//! Golden results: every scenario in `scenarios/` and in `tests/golden/scenarios/` (a coverage
//! corpus: every controller, scheduler, wrapper and impairment) is run for seeds 1–3 and its
//! summary and a digest of its time series are compared byte for byte with the files in
//! `tests/golden/sim/`. A change that moves any of them must say which and why in its commit.
//!
//! Regenerate after an intended change: `MOBIPATH_BLESS=1 cargo test --release -p mobipath-sim
//! --test golden` (then review `git diff tests/golden`).
use mobipath_sim::api::{run_toml, Column, Table};
use std::path::{Path, PathBuf};

const SEEDS: [u64; 3] = [1, 2, 3];

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .expect("repository root")
}

/// Every `.toml` under `dir`, sorted, as paths relative to the repository root — except sweep
/// files (`scenarios/sweeps/`: grids of scenarios, run by `mobipath sweep`, not scenarios) and
/// the long benchmark runs (`scenarios/bench/long/`: an hour of train ride costs ~10 s per seed;
/// their short counterparts are here, and `unknown_keys.rs` still validates them).
fn scenario_files(root: &Path, dir: &str) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![root.join(dir)];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap_or_else(|e| panic!("{}: {e}", d.display())) {
            let p = e.expect("directory entry").path();
            if p.is_dir() {
                if p.file_name().is_some_and(|n| n == "sweeps") || p.ends_with("bench/long") {
                    continue;
                }
                stack.push(p);
            } else if p.extension().is_some_and(|x| x == "toml") {
                out.push(p.strip_prefix(root).expect("under root").to_path_buf());
            }
        }
    }
    out.sort();
    out
}

/// FNV-1a over every cell of the long table (strings as bytes, floats as their bit patterns):
/// any change in any time-series value, name or order changes it.
fn digest(t: &Table) -> String {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    let mut eat = |bytes: &[u8]| {
        for b in bytes {
            h ^= *b as u64;
            h = h.wrapping_mul(0x0100_0000_01b3);
        }
    };
    for (name, col) in &t.columns {
        eat(name.as_bytes());
        match col {
            Column::F64(v) => v.iter().for_each(|x| eat(&x.to_bits().to_le_bytes())),
            Column::Str(v) => v.iter().for_each(|s| {
                eat(s.as_bytes());
                eat(&[0]);
            }),
        }
    }
    let rows = match t.columns.first() {
        Some((_, Column::F64(v))) => v.len(),
        Some((_, Column::Str(v))) => v.len(),
        None => 0,
    };
    format!("{h:016x} ({rows} rows)")
}

fn golden_text(root: &Path, rel: &Path, seed: u64) -> String {
    let file = root.join(rel);
    let text = std::fs::read_to_string(&file).expect("scenario readable");
    let base = file.parent().expect("has a folder");
    let out = run_toml(&text, &rel.to_string_lossy(), base, Some(seed), None)
        .unwrap_or_else(|e| panic!("{}: rejected: {e:?}", rel.display()));
    let doc = serde_json::json!({ "summary": out.summary, "timeseries_digest": digest(&out.timeseries) });
    serde_json::to_string_pretty(&doc).expect("serialises") + "\n"
}

#[test]
fn golden_results_unchanged() {
    // Every incremental cache is compared with a fresh computation on every use: a missed
    // invalidation fails here instead of moving (or, worse, not moving) a golden file. Seed 1
    // also runs with the checks off, as users run it: where a cache stands in for a computation
    // (an MPTCP subflow's repeated idle poll), that path must give the same bytes. The flag is
    // process-wide, read when objects are made; this is this binary's only test.
    let root = repo_root();
    let bless = std::env::var_os("MOBIPATH_BLESS").is_some();
    let mut files = scenario_files(&root, "scenarios");
    files.extend(scenario_files(&root, "tests/golden/scenarios"));
    assert!(files.len() >= 10, "found only {} scenarios", files.len());
    let mut changed = Vec::new();
    for rel in &files {
        // Blessing writes what the checked runs give; the unchecked one only compares.
        let unchecked = if bless { None } else { Some((SEEDS[0], false)) };
        for (seed, checks) in SEEDS.iter().map(|&s| (s, true)).chain(unchecked) {
            mobipath_sim::core::checks::set_cache_checks(checks);
            let got = golden_text(&root, rel, seed);
            let stem = rel.with_extension("");
            let gold = root
                .join("tests/golden/sim")
                .join(&stem)
                .join(format!("seed{seed}.json"));
            if bless {
                std::fs::create_dir_all(gold.parent().unwrap()).unwrap();
                std::fs::write(&gold, &got).unwrap();
                continue;
            }
            match std::fs::read_to_string(&gold) {
                Ok(want) if want == got => {}
                Ok(want) => {
                    let line = want
                        .lines()
                        .zip(got.lines())
                        .position(|(a, b)| a != b)
                        .map_or(0, |i| i + 1);
                    let how = if checks { "" } else { " (self-checks off)" };
                    changed.push(format!(
                        "{} seed {seed}{how}: differs from line {line} of {}",
                        rel.display(),
                        gold.display()
                    ));
                }
                Err(_) => changed.push(format!(
                    "{} seed {seed}: no golden file {}",
                    rel.display(),
                    gold.display()
                )),
            }
        }
    }
    assert!(
        changed.is_empty(),
        "golden results changed (re-bless with MOBIPATH_BLESS=1 only if intended, and say why in the commit):\n{}",
        changed.join("\n")
    );
}
