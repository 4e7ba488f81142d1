//! The live PHA-D (crates/proxy/src/phad) beside the simulator's (crates/sim/src/hst): both run the state machine of `mobipath_hst::phad`, and the same rides through each side's
//! table reader, observations and policy mapping give the same MP_PRIO decisions; the same table
//! gives the same ranges, the same track the same projections, and the same NMEA sentences are
//! accepted or rejected alike. The simulator is a dev-dependency only: the router binary does not
//! link it.
use std::rc::Rc;

use mobipath_proxy::phad::controller::{Config, Controller, Obs, Policy};
use mobipath_proxy::phad::nmea::parse_sentence;
use mobipath_proxy::phad::table::Table;
use mobipath_proxy::phad::track::Track;
use mobipath_sim::hst::gps::{parse_nmea, GeoTrack};
use mobipath_sim::hst::phad::{PhaD, PhaDConfig, PhaDPolicy};
use mobipath_sim::hst::table::{HandoverTable, ObservedHandover};

const MS: u64 = 1_000_000;

/// (time, subflow, backup, predicted lead) of each MP_PRIO.
type Log = Vec<(u64, usize, bool, i64)>;

/// A table with ranges of both operators, two of A close together (merged by both controllers).
fn table() -> HandoverTable {
    let mut t = HandoverTable::new();
    let obs = |op: &str, a: f64, b: f64| ObservedHandover {
        operator: op.into(),
        gps_start_m: a,
        gps_end_m: b,
    };
    t.learn(
        &[
            obs("A", 1000.0, 1003.0),
            obs("B", 1600.0, 1640.0),
            obs("A", 2400.0, 2410.0),
            obs("A", 2432.0, 2440.0),
            obs("B", 3500.0, 3502.0),
        ],
        8.0,
    );
    t.learn(&[obs("A", 1001.0, 1004.0), obs("B", 1605.0, 1642.0)], 8.0);
    t
}

struct Lcg(u64);
impl Lcg {
    fn next(&mut self) -> f64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (self.0 >> 11) as f64 / (1u64 << 53) as f64
    }
}

/// Rides both controllers over the track with GPS noise, varying RTTs and a data counter that
/// stalls after each B=0 for a while; returns both decision lists as (t, subflow, backup, lead).
fn ride(policy: PhaDPolicy, lead_ms: f64, period_ms: u64, tick_ms: Option<u64>, seed: u64) -> (Log, Log) {
    let t = table();
    let csv = t.to_csv();
    let ours = Table::parse(&csv, "t.csv").unwrap();
    let ops = vec![Some("A".to_string()), Some("B".to_string())];
    let mut sim = PhaD::new(PhaDConfig { policy, lead_ms }, Rc::new(t), ops.clone(), period_ms * MS);
    let (p, ql) = match policy {
        PhaDPolicy::Paper => (Policy::Paper, 0.0),
        PhaDPolicy::QueueAware => (Policy::QueueAware, 0.0),
        PhaDPolicy::Resend => (Policy::Resend, 0.0),
    };
    let mut live = Controller::new(
        Config {
            policy: p,
            lead_ms: ql,
            resend_b0: false,
        },
        ours,
        ops,
        period_ms * MS,
    );
    let mut rng = Lcg(seed);
    let mut live_log = Vec::new();
    let step = tick_ms.unwrap_or(period_ms);
    let speed = 70.0 + 20.0 * rng.next();
    let mut rx = [0u64; 2];
    for i in 0..(60_000 / step) {
        let now = i * step * MS;
        let rtt = [
            (40.0 + 30.0 * rng.next()) as u64 * MS,
            (60.0 + 50.0 * rng.next()) as u64 * MS,
        ];
        // Data flows on a path except in a 300 ms window every 2 s.
        for (k, r) in rx.iter_mut().enumerate() {
            if (now / MS + 700 * k as u64) % 2000 > 300 {
                *r += 1;
            }
        }
        // The live controller's queue-aware lead is the measured drain; give it the simulator's lead_ms.
        let obs: Vec<Obs> = (0..2)
            .map(|k| Obs {
                rtt: rtt[k],
                drain: (lead_ms * 1e6) as u64,
                rx: rx[k],
                has_subflows: true,
                rto: 0,
                peer_drain: None,
            })
            .collect();
        if (i * step).is_multiple_of(period_ms) {
            let pos = 200.0 + speed * now as f64 / 1e9 + 4.0 * (rng.next() - 0.5);
            sim.on_fix(now, pos, &rtt, &rx);
            live_log.extend(live.on_fix(now, pos, &obs));
        } else {
            sim.on_tick(now, &rtt, &rx);
            live_log.extend(live.on_tick(now, &obs));
        }
    }
    let a = sim
        .log
        .iter()
        .map(|d| (d.at, d.subflow, d.backup, d.predicted_lead_ns))
        .collect();
    let b = live_log
        .iter()
        .map(|d| (d.at, d.subflow, d.backup, d.predicted_lead_ns))
        .collect();
    (a, b)
}

#[test]
fn same_rides_same_decisions() {
    for (policy, lead) in [
        (PhaDPolicy::Paper, 0.0),
        (PhaDPolicy::QueueAware, 300.0),
        (PhaDPolicy::QueueAware, 1200.0),
        (PhaDPolicy::Resend, 0.0),
    ] {
        for (period, tick) in [(10, None), (100, None), (1000, Some(50))] {
            for seed in 1..4 {
                let (sim, live) = ride(policy, lead, period, tick, seed);
                assert!(
                    sim.iter().filter(|d| d.2).count() >= 4,
                    "{policy:?}: the ride crosses the ranges: {sim:?}"
                );
                assert_eq!(sim, live, "{policy:?} lead {lead} period {period} seed {seed}");
            }
        }
    }
}

#[test]
fn same_table_same_ranges() {
    let t = table();
    for k in 1..=2 {
        let mut tk = t.clone();
        tk.set_min_support(k);
        let ours = Table::parse(&tk.to_csv(), "t.csv").unwrap();
        assert_eq!(ours.min_support, k);
        for (op, rs) in &tk.operators {
            let mine: Vec<(f64, f64)> = ours.ranges[op].iter().map(|r| (r.start_m, r.end_m)).collect();
            let theirs: Vec<(f64, f64)> = rs.iter().map(|r| (r.start_m, r.end_m)).collect();
            assert_eq!(mine, theirs, "{op} k={k}");
        }
        assert_eq!(ours.ranges.len(), tk.operators.len());
    }
    // Malformed tables: both refuse, naming the same line.
    for text in [
        "operator,start_m,end_m,count\nA,10,5,1\n",
        "operator,start_m,end_m,count\nA,1,5,0\n",
        "# min_support = 0\noperator,start_m,end_m,count\n",
        "x\n",
    ] {
        let a = HandoverTable::from_csv(text, "t.csv").unwrap_err();
        let b = Table::parse(text, "t.csv").unwrap_err();
        let line = |s: &str| s.split(": ").nth(1).map(str::to_string);
        assert_eq!(line(&a[0].to_string()), line(&b[0]), "{text:?}: {a:?} / {b:?}");
    }
}

#[test]
fn same_track_same_projection() {
    let csv = "lat,lon\n37.50,127.00\n37.52,127.03\n37.55,127.03\n37.56,127.10\n";
    let (a, b) = (GeoTrack::from_csv(csv, "t").unwrap(), Track::parse(csv, "t").unwrap());
    assert_eq!(a.length_m(), b.length_m());
    let mut rng = Lcg(7);
    for _ in 0..500 {
        let (lat, lon) = (37.49 + 0.08 * rng.next(), 126.99 + 0.12 * rng.next());
        assert_eq!(a.project(lat, lon), b.project(lat, lon));
    }
}

fn ck(body: &str) -> String {
    format!("${body}*{:02X}", mobipath_hst::nmea::checksum(body))
}

#[test]
fn same_sentences_accepted() {
    let mut lines = vec![
        ck("GPGGA,123519,4807.038,N,01131.000,E,1,08,0.9,545.4,M,46.9,M,,"),
        ck("GNRMC,000001,A,3345.000,S,15112.000,W,80.0,90.0,010524,,,A"),
        ck("GPRMC,123519,A,4807.038,N,01131.000,E,0,0,290223,,"),
        ck("GPRMC,123519,A,4807.038,N,01131.000,E,0,0,290224,,"),
        ck("GPGGA,123519,,,,,0,00,,,M,,M,,"),
        ck("GPRMC,123519,V,,,,,,,230394,,"),
        ck("GPGSV,1,1,00"),
        ck("GPGGA,123519,4807.038,X,01131.000,E,1,08,0.9,545.4,M,46.9,M,,"),
        ck("GPGGA,123519,4807.038,N,1131.000,E,1,08"),
        ck("GPGGA,126519,4807.038,N,01131.000,E,1,08"),
        ck("GPGGA,123519,4807.038,N,01131.000,E,x,08"),
        // Fix quality 9: the simulator accepted it until both readers shared their rules.
        ck("GPGGA,123519,4807.038,N,01131.000,E,9,08"),
        ck("GPGGA,123519,4807"),
        ck("GPRMC,123519,B,4807.038,N,01131.000,E,0,0,230394,,"),
        ck("GPGGA,123519,48é7.038,N,01131.000,E,1,08"),
        "$GPGGA,123519,4807.038,N,01131.000,E,1,08*00".to_string(),
        "$GPGGA,123519,4807.038,N,01131.000,E,1,08".to_string(),
        "$GPGGA,123519,4807.038,N,01131.000,E,1,08*0".to_string(),
        "GPGGA,123519".to_string(),
    ];
    // Truncations of a good sentence.
    let good = ck("GPRMC,123519,A,4807.038,N,01131.000,E,022.4,084.4,230394,003.1,W");
    lines.extend((1..good.len()).map(|i| good[..i].to_string()));
    for l in &lines {
        let sim = parse_nmea(l, "x");
        let ours = parse_sentence(l);
        match (&sim, &ours) {
            (Ok(f), Ok(Some(g))) => assert!(f.len() == 1 && f[0].lat == g.lat && f[0].lon == g.lon, "{l}"),
            (Err(e), Ok(None)) => assert!(
                e.len() == 1 && e[0].to_string().contains("no GGA or RMC sentence with a valid fix"),
                "{l}: {e:?}"
            ),
            (Err(e), Err(_)) => assert!(!e[0].to_string().contains("no GGA or RMC"), "{l}"),
            _ => panic!("{l}: simulator {sim:?}, live {ours:?}"),
        }
    }
}

/// The router's `replay:` source reads the simulator's `[hst.gps_trace]` format: the same traces
/// are accepted (with the same fixes) or refused by both, with the same field named first. Before
/// `mobipath_hst::fixes` the router allowed equal times and refused times above 1e7 s.
#[test]
fn same_position_traces_accepted_alike() {
    use mobipath_proxy::phad::gps::parse_replay;
    use mobipath_sim::hst::gps::parse_position_trace;
    let traces = [
        "time_s,position_m\n0,10\n0.5,20\n",
        "# comment\ntime_s,position_m\n\n0,10\n1,10\n",
        "time_s,position_m\n0,10\n0,20\n",
        "time_s,position_m\n1,10\n0.5,20\n",
        "time_s,position_m\n20000000,5\n",
        "time_s,position_m\n1e9,1e9\n",
        "time_s,position_m\n1e10,5\n",
        "time_s,position_m\n-1,5\n",
        "time_s,position_m\n1,-5\n",
        "time_s,position_m\nnan,5\n",
        "time_s,position_m\n1,x\n",
        "time_s,position_m\n",
        "",
        "position_m,time_s\n1,2\n",
        "time_s,position_m\n1,2,3\n",
    ];
    for t in traces {
        let (router, sim) = (parse_replay(t, "r.csv"), parse_position_trace(t, "r.csv"));
        match (&router, &sim) {
            (Ok(a), Ok(b)) => assert_eq!(a, b, "{t:?}"),
            (Err(a), Err(b)) => {
                // Where both name a line, they name the same line and field ("r.csv: line 3: time_s = ...").
                let at = |s: &str| {
                    s.split_once(": line ")
                        .map(|(_, rest)| rest.split(" = ").next().unwrap_or("").to_string())
                };
                let (ra, sb) = (at(&a[0]), at(&b[0].to_string()));
                if ra.is_some() || sb.is_some() {
                    assert_eq!(ra, sb, "{t:?}: router {a:?}, simulator {b:?}");
                }
            }
            _ => panic!("{t:?}: router {router:?}, simulator {sim:?}"),
        }
    }
}
