//! `mobipath-proxy`: see the crate README and `cli.rs`.
fn main() {
    std::process::exit(mobipath_proxy::cli::main(std::env::args().skip(1).collect()));
}
