//! `mobipath-emu`: see the crate README and `cli.rs`.
fn main() {
    std::process::exit(mobipath_emu::cli::main(std::env::args().skip(1).collect()));
}
