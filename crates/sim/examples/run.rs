//! `cargo run --release -p mobipath-sim --example run -- SCENARIO [SEED] [--out DIR]`: runs a
//! scenario and prints the summary JSON and the wall time (a quick check without the Python
//! front end). With `--out DIR` it also writes `DIR/summary.json` and `DIR/timeseries.csv`
//! (every value printed with Rust's shortest round-trip formatting, so two runs can be compared
//! byte for byte).
use std::fmt::Write as _;
use std::path::Path;
use std::time::Instant;

fn main() {
    let mut args: Vec<String> = std::env::args().skip(1).collect();
    let mut out_dir = None;
    if let Some(k) = args.iter().position(|a| a == "--out") {
        if k + 1 >= args.len() {
            eprintln!("--out needs a directory");
            std::process::exit(2);
        }
        out_dir = Some(args.remove(k + 1));
        args.remove(k);
    }
    let Some(file) = args.first().cloned() else {
        eprintln!("usage: run SCENARIO [SEED] [--out DIR]");
        std::process::exit(2);
    };
    let seed = match args.get(1).map(|s| s.parse::<u64>()) {
        None => None,
        Some(Ok(s)) => Some(s),
        Some(Err(_)) => {
            eprintln!("seed must be an integer");
            std::process::exit(2);
        }
    };
    let text = std::fs::read_to_string(&file).unwrap_or_else(|e| {
        eprintln!("{file}: {e}");
        std::process::exit(1)
    });
    let base = Path::new(&file).parent().unwrap_or(Path::new("."));
    let t0 = Instant::now();
    match mobipath_sim::api::run_toml(&text, &file, base, seed, None) {
        Ok(o) => {
            let wall = t0.elapsed().as_secs_f64();
            let summary = serde_json::to_string_pretty(&o.summary).expect("summary serialises");
            println!("{summary}");
            eprintln!(
                "wall {:.3} s, {} events, {:.1} M events/s",
                wall,
                o.events,
                o.events as f64 / wall / 1e6
            );
            if let Some(dir) = out_dir {
                if let Err(e) = write_out(Path::new(&dir), &summary, &o.timeseries) {
                    eprintln!("{dir}: {e}");
                    std::process::exit(1);
                }
            }
        }
        Err(errs) => {
            for e in errs {
                eprintln!("{file}: {e}");
            }
            std::process::exit(1);
        }
    }
}

fn write_out(dir: &Path, summary: &str, ts: &mobipath_sim::api::Table) -> std::io::Result<()> {
    use mobipath_sim::api::Column;
    std::fs::create_dir_all(dir)?;
    std::fs::write(dir.join("summary.json"), format!("{summary}\n"))?;
    let rows = ts.columns.first().map_or(0, |(_, c)| match c {
        Column::F64(v) => v.len(),
        Column::Str(v) => v.len(),
    });
    let mut csv = ts.columns.iter().map(|(n, _)| n.as_str()).collect::<Vec<_>>().join(",");
    csv.push('\n');
    for r in 0..rows {
        for (k, (_, c)) in ts.columns.iter().enumerate() {
            if k > 0 {
                csv.push(',');
            }
            match c {
                Column::F64(v) => write!(csv, "{:?}", v[r]).expect("string write"),
                Column::Str(v) => csv.push_str(&v[r]),
            }
        }
        csv.push('\n');
    }
    std::fs::write(dir.join("timeseries.csv"), csv)
}
