"""`mobipath bench --emulator --ceiling`'s search (issue 19, item 5): the highest offered load the
emulator delivers (>= 99 %) with a p99 release error <= 200 µs, stopping at the first load that
fails, and never claiming a ceiling where the traffic generator, not the emulator, fell short."""

from mobipath import bench


def fake(limit_mbps, p99_at=None, generator_mbps=1e9):
    """A measure function: delivers everything up to `limit_mbps`, 90 % above it; p99 = 50 µs
    below `p99_at`, 900 µs from it; the generator sends at most `generator_mbps`."""

    def measure(offered):
        want = round(offered * 1000)
        sent = round(min(offered, generator_mbps) * 1000)
        return {
            "offered_packets": want,
            "sent_packets": sent,
            "received_packets": sent if offered <= limit_mbps else round(0.9 * sent),
            "p99_us": 900.0 if p99_at is not None and offered >= p99_at else 50.0,
        }

    return measure


def test_the_ceiling_is_the_last_load_before_delivery_fails():
    r = bench.emulator_ceiling(fake(700))
    assert r["ceiling_mbps"] == 600 and [x["offered_mbps"] for x in r["rows"]] == [200, 400, 600, 800]
    assert not r["rows"][-1]["sustained"] and "delivered 90.0 %" in r["stopped"]


def test_timing_breaks_the_ceiling_too():
    r = bench.emulator_ceiling(fake(1e9, p99_at=1000))
    assert r["ceiling_mbps"] == 800 and "p99 release error 900 µs" in r["stopped"]


def test_a_generator_that_falls_short_ends_the_search_without_a_claim():
    r = bench.emulator_ceiling(fake(1e9, generator_mbps=500))
    assert r["ceiling_mbps"] == 400 and "traffic generator" in r["stopped"]
    assert r["rows"][-1]["generator_share"] < 0.99


def test_no_ceiling_when_the_first_step_fails_and_all_when_none_does():
    assert bench.emulator_ceiling(fake(100))["ceiling_mbps"] is None
    r = bench.emulator_ceiling(fake(1e9))
    assert r["ceiling_mbps"] == bench.CEILING_STEPS_MBPS[-1] and r["stopped"] == "every step sustained"
