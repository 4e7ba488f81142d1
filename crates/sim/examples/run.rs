//! `cargo run --release -p mobipath-sim --example run -- SCENARIO [SEED]`: runs a scenario and
//! prints the summary JSON and the wall time (a quick check without the Python front end).
use std::path::Path;
use std::time::Instant;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let Some(file) = args.get(1) else {
        eprintln!("usage: run SCENARIO [SEED]");
        std::process::exit(2);
    };
    let seed = args.get(2).map(|s| s.parse::<u64>().expect("seed must be an integer"));
    let text = std::fs::read_to_string(file).unwrap_or_else(|e| {
        eprintln!("{file}: {e}");
        std::process::exit(1)
    });
    let base = Path::new(file).parent().unwrap_or(Path::new("."));
    let t0 = Instant::now();
    match mobipath_sim::api::run_toml(&text, file, base, seed, None) {
        Ok(o) => {
            let wall = t0.elapsed().as_secs_f64();
            println!("{}", serde_json::to_string_pretty(&o.summary).unwrap());
            eprintln!("wall {:.3} s, {} events, {:.1} M events/s", wall, o.events, o.events as f64 / wall / 1e6);
        }
        Err(errs) => {
            for e in errs {
                eprintln!("{file}: {e}");
            }
            std::process::exit(1);
        }
    }
}
