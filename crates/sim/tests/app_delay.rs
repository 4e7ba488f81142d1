//! Application delay of a CBR stream (docs/metrics.md): delivery of each chunk's last byte minus
//! when the application wrote it.
mod common;
use common::{f, flow, run, single};

const CBR: &str = "traffic = { kind = \"cbr\", rate_mbps = 5 }";

#[test]
fn cbr_delay_is_the_path_delay_when_the_link_keeps_up_and_grows_when_it_does_not() {
    // 5 Mbit/s over 20 Mbit/s, 20 ms one way: a chunk waits for its own serialisation (0.6 ms)
    // and the propagation (20 ms); nothing queues.
    let o = run(&single(10.0, 20.0, 20.0, 100, "", "cubic", CBR));
    let fl = flow(&o, "f");
    let (mean, p99) = (f(&fl["app_delay_mean_ms"]), f(&fl["app_delay_p99_ms"]));
    assert!(mean > 20.0 && mean < 21.5, "{fl}");
    assert!(p99 < 23.0, "{fl}");
    // 5 Mbit/s into 4 Mbit/s: the backlog grows through the run, so the p99 is seconds.
    let o = run(&single(10.0, 4.0, 20.0, 100, "", "cubic", CBR));
    assert!(f(&flow(&o, "f")["app_delay_p99_ms"]) > 1000.0);
    // Bulk traffic has no application delay.
    let o = run(&single(
        2.0,
        20.0,
        20.0,
        100,
        "",
        "cubic",
        "traffic = { kind = \"bulk\" }",
    ));
    assert!(flow(&o, "f").get("app_delay_p99_ms").is_none());
}
