//! The training run of the profile-guided build (`build-backend/mobipath_build.py`): runs each
//! scenario file given and exits non-zero on the first that fails.
//!
//! Why it lives in this crate and not in `mobipath-sim`: the profile matches functions by their
//! symbol names, which carry a hash of the crate's dependency graph and features. Built here,
//! `mobipath-sim` and its dependencies get exactly the features the extension's build gives them
//! (an example of `mobipath-sim` would add its dev-dependencies' features and match nothing).
use std::path::Path;

fn main() {
    let files: Vec<String> = std::env::args().skip(1).collect();
    if files.is_empty() {
        eprintln!("usage: pgo_train SCENARIO...");
        std::process::exit(2);
    }
    for file in &files {
        let text = std::fs::read_to_string(file).unwrap_or_else(|e| {
            eprintln!("{file}: {e}");
            std::process::exit(1)
        });
        let base = Path::new(file).parent().unwrap_or(Path::new("."));
        if let Err(errs) = mobipath_sim::api::run_toml(&text, file, base, None, None) {
            for e in errs {
                eprintln!("{file}: {e}");
            }
            std::process::exit(1);
        }
    }
}
