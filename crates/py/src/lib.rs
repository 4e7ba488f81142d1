//! Python bindings for mobipath's simulator: the `mobipath._core` extension module.
//!
//! A thin layer over [`mobipath_sim::api`]: `validate`, `schema` and `run`. Everything a user
//! sees (paths, result objects, files, the CLI) lives in the Python package `python/mobipath`;
//! this crate only moves data across the boundary and maps failures to Python exceptions:
//!
//! * configuration errors → `ScenarioError` (its `errors` attribute lists every problem as a
//!   dict with `field`, `value`, `message`);
//! * a panic inside the simulator → `InternalError` (a `RuntimeError`), never an abort;
//! * an exception raised by the progress callback → re-raised once the run returns (the
//!   simulator cannot be interrupted mid-run; the callback is not called again after it failed).
//!
//! The GIL is released while the simulator runs. With a progress callback it is re-acquired
//! only for each call of the callback.
// pyo3 0.22's `#[pyfunction]` expansion trips this lint on every `PyResult` return type.
#![allow(clippy::useless_conversion)]
use mobipath_sim::api::{self, RunOutput};
use mobipath_sim::ConfigError;
use pyo3::create_exception;
use pyo3::exceptions::{PyException, PyRuntimeError};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::PathBuf;

mod heap;
mod json;
mod timeseries;

#[global_allocator]
static ALLOCATOR: heap::Counting = heap::Counting;
use timeseries::TimeSeries;

create_exception!(
    _core,
    ScenarioError,
    PyException,
    "A scenario is invalid. `errors` lists every problem found (dicts: field, value, message); `file` names the scenario."
);
create_exception!(
    _core,
    InternalError,
    PyRuntimeError,
    "The simulator failed internally (a bug: please report it with the scenario file and seed)."
);

/// Converts configuration errors into a Python list of dicts.
fn errors_to_list<'py>(py: Python<'py>, errs: &[ConfigError]) -> PyResult<Bound<'py, PyList>> {
    let list = PyList::empty_bound(py);
    for e in errs {
        let d = PyDict::new_bound(py);
        d.set_item("field", &e.field)?;
        d.set_item("value", &e.value)?;
        d.set_item("message", &e.message)?;
        list.append(d)?;
    }
    Ok(list)
}

/// Builds a `ScenarioError` whose message lists every error and whose `errors`/`file`
/// attributes carry them in structured form.
fn scenario_error(py: Python<'_>, file: &str, errs: &[ConfigError]) -> PyErr {
    let lines: Vec<String> = errs.iter().map(|e| format!("{file}: {e}")).collect();
    let err = ScenarioError::new_err(lines.join("\n"));
    let value = err.value_bound(py);
    let attach = || -> PyResult<()> {
        value.setattr("errors", errors_to_list(py, errs)?)?;
        value.setattr("file", file)?;
        Ok(())
    };
    match attach() {
        Ok(()) => err,
        Err(e) => e,
    }
}

/// Turns a caught panic payload into an `InternalError`.
fn panic_error(what: &str, payload: Box<dyn std::any::Any + Send>) -> PyErr {
    let msg = if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_string()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "unknown panic".to_string()
    };
    InternalError::new_err(format!(
        "mobipath simulator bug while {what}: {msg} (please report it with the scenario file and seed)"
    ))
}

/// Parses and checks a scenario; returns every error found (an empty list when valid).
///
/// `file` is only used in messages; relative paths inside the scenario (traces, tables)
/// are resolved against `base_dir`.
#[pyfunction]
#[pyo3(signature = (text, file = String::from("<string>"), base_dir = PathBuf::from(".")))]
fn validate(py: Python<'_>, text: String, file: String, base_dir: PathBuf) -> PyResult<Py<PyList>> {
    let result = py.allow_threads(|| catch_unwind(|| api::validate_toml(&text, &file, &base_dir)));
    match result {
        Ok(errs) => Ok(errors_to_list(py, &errs)?.unbind()),
        Err(payload) => Err(panic_error("validating the scenario", payload)),
    }
}

/// JSON Schema of the scenario file format, as a JSON string.
#[pyfunction]
fn schema() -> PyResult<String> {
    catch_unwind(api::schema_json).map_err(|p| panic_error("building the schema", p))
}

/// Converts a run's output into the dict handed to Python: the summary and the resolved scenario
/// as JSON text (exact numbers, any JSON reader), or with `objects` as the Python objects
/// `json.loads` makes of that text (without importing `json`: see `json.rs`).
fn output_to_dict(py: Python<'_>, out: RunOutput, objects: bool) -> PyResult<Py<PyDict>> {
    let d = PyDict::new_bound(py);
    if objects {
        d.set_item("summary", json::to_python(py, &out.summary)?)?;
        d.set_item("resolved_scenario", json::to_python(py, &out.resolved_scenario)?)?;
    } else {
        let summary = serde_json::to_string(&out.summary)
            .map_err(|e| InternalError::new_err(format!("cannot serialise the summary: {e}")))?;
        let resolved = serde_json::to_string(&out.resolved_scenario)
            .map_err(|e| InternalError::new_err(format!("cannot serialise the resolved scenario: {e}")))?;
        d.set_item("summary", summary)?;
        d.set_item("resolved_scenario", resolved)?;
    }
    d.set_item("timeseries", Py::new(py, TimeSeries::new(out.timeseries.columns))?)?;
    d.set_item("events", out.events)?;
    d.set_item("seed_matters", out.seed_matters)?;
    Ok(d.unbind())
}

/// Runs a scenario and returns a dict with `summary` and `resolved_scenario` (JSON strings; with
/// `objects`, the dicts `json.loads` would make of them), `timeseries` (a `TimeSeries`: read
/// like a dict of column name → list, or written with `write_parquet(path)`), `events` (int)
/// and `interrupted` (bool).
///
/// `out_dir` is the run's result directory, where packet captures go (`<out_dir>/pcap/`: asked
/// for by the scenario's `[output] pcap`, or on every link by `pcap`; `pcap_max_mb` replaces the
/// size limit). `seed` overrides the scenario's seed. `progress`, if given, is called with the fraction of
/// simulated time done (0..1). Signals are checked as simulated time advances (a few hundred
/// times per run): on Ctrl-C the run stops there and, with `allow_partial`, returns what it has
/// (`summary.partial` says when it stopped, `interrupted` is true); without it, the
/// `KeyboardInterrupt` propagates. Raises `ScenarioError` if the scenario is invalid.
#[pyfunction]
#[pyo3(signature = (text, file = String::from("<string>"), base_dir = PathBuf::from("."), seed = None, progress = None, allow_partial = false, objects = false, out_dir = None, pcap = false, pcap_max_mb = None))]
#[allow(clippy::too_many_arguments)]
fn run(
    py: Python<'_>,
    text: String,
    file: String,
    base_dir: PathBuf,
    seed: Option<u64>,
    progress: Option<PyObject>,
    allow_partial: bool,
    objects: bool,
    out_dir: Option<PathBuf>,
    pcap: bool,
    pcap_max_mb: Option<f64>,
) -> PyResult<Py<PyDict>> {
    let capture = api::CaptureRequest {
        out_dir,
        force: pcap,
        max_mb: pcap_max_mb,
    };
    let mut callback_error: Option<PyErr> = None;
    let result = py.allow_threads(|| {
        let mut report = |fraction: f64| -> bool {
            if callback_error.is_some() {
                return false;
            }
            Python::with_gil(|py| {
                let r = py.check_signals().and_then(|_| match &progress {
                    Some(cb) => cb.call1(py, (fraction,)).map(|_| ()),
                    None => Ok(()),
                });
                if let Err(e) = r {
                    callback_error = Some(e);
                }
            });
            callback_error.is_none()
        };
        catch_unwind(AssertUnwindSafe(|| {
            api::run_toml_capturing(&text, &file, &base_dir, seed, Some(&mut report), &capture)
        }))
    });
    let interrupted = match callback_error {
        Some(e) if allow_partial && e.is_instance_of::<pyo3::exceptions::PyKeyboardInterrupt>(py) => true,
        Some(e) => return Err(e),
        None => false,
    };
    match result {
        Ok(Ok(out)) => {
            let d = output_to_dict(py, out, objects)?;
            d.bind(py).set_item("interrupted", interrupted)?;
            Ok(d)
        }
        Ok(Err(errs)) => Err(scenario_error(py, &file, &errs)),
        Err(payload) => Err(panic_error("running the scenario", payload)),
    }
}

/// `(current, peak)` bytes allocated by the simulator's Rust code (see `heap.rs`); with
/// `reset=True` the peak restarts from the current usage first (call it before a run).
#[pyfunction]
#[pyo3(signature = (reset = false))]
fn heap_bytes(reset: bool) -> (usize, usize) {
    if reset {
        heap::reset_peak();
    }
    heap::stats()
}

/// The scenario's links as the simulator runs them (the train's handovers and capacity folded
/// in) and the train's true handovers, as JSON text. Raises `ScenarioError`.
#[pyfunction]
#[pyo3(signature = (text, file = String::from("<string>"), base_dir = PathBuf::from("."), seed = None))]
fn effective_links(
    py: Python<'_>,
    text: String,
    file: String,
    base_dir: PathBuf,
    seed: Option<u64>,
) -> PyResult<String> {
    let result = py.allow_threads(|| {
        catch_unwind(AssertUnwindSafe(|| {
            api::effective_links_json(&text, &file, &base_dir, seed)
        }))
    });
    match result {
        Ok(Ok(json)) => Ok(json),
        Ok(Err(errs)) => Err(scenario_error(py, &file, &errs)),
        Err(payload) => Err(panic_error("resolving the scenario's links", payload)),
    }
}

/// The resolved plan of a run as JSON text (see `mobipath_sim::api::plan_json`): what the
/// emulator and other layers act on instead of re-reading the TOML. Raises `ScenarioError`.
#[pyfunction]
#[pyo3(signature = (text, file = String::from("<string>"), base_dir = PathBuf::from("."), seed = None))]
fn plan(py: Python<'_>, text: String, file: String, base_dir: PathBuf, seed: Option<u64>) -> PyResult<String> {
    let result = py.allow_threads(|| catch_unwind(AssertUnwindSafe(|| api::plan_json(&text, &file, &base_dir, seed))));
    match result {
        Ok(Ok(json)) => Ok(json),
        Ok(Err(errs)) => Err(scenario_error(py, &file, &errs)),
        Err(payload) => Err(panic_error("resolving the scenario", payload)),
    }
}

/// The seed a scenario's text names (`seed`, default 1), or None if it is not valid TOML or the
/// seed is not an integer in range (the run reports why).
#[pyfunction]
fn scenario_seed(text: String) -> Option<u64> {
    api::scenario_seed(&text)
}

/// The registries' names as JSON text: `{"cc", "coupled_cc", "schedulers", "wrappers",
/// "elements"}` (each a list), so no name list is written twice.
#[pyfunction]
fn names() -> String {
    api::names_json()
}

/// P1's worked examples (Figs. 5 and 6) replayed through the delay-predictive scheduler, the
/// link model and the MPTCP receiver, as JSON text (`mobipath_sim::mptcp::p1_examples`).
#[pyfunction]
fn p1_worked_examples() -> String {
    mobipath_sim::mptcp::p1_examples::worked_examples_json()
}

/// Learns a handover table from `runs` preliminary runs of the scenario's train and returns it
/// as CSV; `existing` (CSV text) is accumulated into when given. Raises `ScenarioError`.
#[pyfunction]
#[pyo3(signature = (text, file = String::from("<string>"), base_dir = PathBuf::from("."), runs = 50, first_seed = 1, margin_m = None, existing = None, min_support = None))]
#[allow(clippy::too_many_arguments)]
fn learn_handover_table(
    py: Python<'_>,
    text: String,
    file: String,
    base_dir: PathBuf,
    runs: u64,
    first_seed: u64,
    margin_m: Option<f64>,
    existing: Option<String>,
    min_support: Option<u64>,
) -> PyResult<String> {
    let result = py.allow_threads(|| {
        catch_unwind(AssertUnwindSafe(|| {
            api::learn_handover_table(
                &text,
                &file,
                &base_dir,
                runs,
                first_seed,
                margin_m,
                existing.as_deref(),
                min_support,
            )
        }))
    });
    match result {
        Ok(Ok(csv)) => Ok(csv),
        Ok(Err(errs)) => Err(scenario_error(py, &file, &errs)),
        Err(payload) => Err(panic_error("learning the handover table", payload)),
    }
}

/// Learns a handover table from recorded runs. `runs`: (nmea text, nmea file, handover-log text,
/// handover-log file) per run. Returns (CSV, summary line).
#[pyfunction]
#[pyo3(signature = (track, track_file, runs, margin_m = None, max_offset_m = None, max_gap_s = None, existing = None, min_support = None))]
#[allow(clippy::too_many_arguments)]
fn learn_handover_table_recorded(
    py: Python<'_>,
    track: String,
    track_file: String,
    runs: Vec<(String, String, String, String)>,
    margin_m: Option<f64>,
    max_offset_m: Option<f64>,
    max_gap_s: Option<f64>,
    existing: Option<String>,
    min_support: Option<u64>,
) -> PyResult<(String, String)> {
    let runs: Vec<api::RecordedRunText> = runs
        .into_iter()
        .map(|(nmea, nmea_file, handovers, handovers_file)| api::RecordedRunText {
            nmea,
            nmea_file,
            handovers,
            handovers_file,
        })
        .collect();
    let result = py.allow_threads(|| {
        catch_unwind(AssertUnwindSafe(|| {
            api::learn_handover_table_recorded(
                &track,
                &track_file,
                &runs,
                margin_m,
                max_offset_m,
                max_gap_s,
                existing.as_deref(),
                min_support,
            )
        }))
    });
    match result {
        Ok(Ok(out)) => Ok(out),
        Ok(Err(errs)) => Err(scenario_error(py, "recorded runs", &errs)),
        Err(payload) => Err(panic_error("learning the handover table from recorded runs", payload)),
    }
}

/// A handover table's content as JSON: `runs`, `min_support`, `ranges` (those PHA uses) and
/// `support`, each `{operator: [[start_m, end_m, count], ...]}`. Raises ScenarioError for a
/// malformed table (every bad line named).
#[pyfunction]
fn handover_table_json(py: Python<'_>, csv: String, file: String) -> PyResult<String> {
    match mobipath_sim::hst::table::HandoverTable::from_csv(&csv, &file) {
        Ok(t) => {
            let side =
                |m: &std::collections::BTreeMap<String, Vec<mobipath_sim::hst::table::Range>>| -> serde_json::Value {
                    m.iter()
                        .map(|(op, rs)| {
                            (
                                op.clone(),
                                rs.iter()
                                    .map(|r| serde_json::json!([r.start_m, r.end_m, r.count]))
                                    .collect::<Vec<_>>()
                                    .into(),
                            )
                        })
                        .collect::<serde_json::Map<_, _>>()
                        .into()
                };
            Ok(serde_json::json!({"runs": t.runs, "min_support": t.min_support, "ranges": side(&t.operators), "support": side(&t.support)}).to_string())
        }
        Err(errs) => Err(scenario_error(py, &file, &errs)),
    }
}

/// Runs the link emulator's command line (`mobipath-emu ARGS...`) in this process and returns
/// its exit code; `python -m mobipath.emulate.emu_process` uses it so a wheel ships the
/// emulator. It installs signal handlers and may exit the process: call it only from a process
/// of its own.
#[pyfunction]
fn emulator_main(py: Python<'_>, args: Vec<String>) -> i32 {
    py.allow_threads(|| mobipath_emu::cli::main(args))
}

/// Runs the proxy's command line (`mobipath-proxy ARGS...`, crates/proxy) in this process and
/// returns its exit code; `python -m mobipath.router.proxy_process` uses it so a wheel ships the
/// proxy. It installs SIGTERM/SIGINT handlers: call it only from a process of its own.
#[pyfunction]
fn proxy_main(py: Python<'_>, args: Vec<String>) -> i32 {
    py.allow_threads(|| mobipath_proxy::cli::main(args))
}

fn netlink_err(e: std::io::Error) -> PyErr {
    pyo3::exceptions::PyOSError::new_err(e.to_string())
}

/// Sets (`backup=True`) or clears the backup flag of MPTCP endpoint `endpoint_id` over generic
/// netlink (`MPTCP_PM_CMD_SET_FLAGS`, crates/proxy/src/netlink.rs), in network namespace `netns`
/// if given; the kernel sends MP_PRIO on the endpoint's subflows. Raises OSError.
#[pyfunction]
#[pyo3(signature = (endpoint_id, backup, netns=None))]
fn mptcp_set_backup(py: Python<'_>, endpoint_id: u8, backup: bool, netns: Option<String>) -> PyResult<()> {
    py.allow_threads(|| {
        mobipath_proxy::netlink::MptcpPm::open_in(netns.as_deref())
            .and_then(|mut pm| pm.set_backup(endpoint_id, backup))
    })
    .map_err(netlink_err)
}

/// Every MPTCP endpoint as (id, flags, address or "") over generic netlink
/// (`MPTCP_PM_CMD_GET_ADDR`); flag bits as in include/uapi/linux/mptcp.h (1 signal, 2 subflow,
/// 4 backup, 8 fullmesh). Raises OSError.
#[pyfunction]
#[pyo3(signature = (netns=None))]
fn mptcp_endpoints(py: Python<'_>, netns: Option<String>) -> PyResult<Vec<(u8, u32, String)>> {
    py.allow_threads(|| mobipath_proxy::netlink::MptcpPm::open_in(netns.as_deref()).and_then(|mut pm| pm.endpoints()))
        .map(|v| {
            v.into_iter()
                .map(|e| (e.id, e.flags, e.addr.map(|a| a.to_string()).unwrap_or_default()))
                .collect()
        })
        .map_err(netlink_err)
}

/// The simulator's PHA-D controller (P0 §3.3, `crates/sim/src/hst/phad.rs`) for a live router:
/// fed GPS positions along the track, it says when to mark a subflow backup (MP_PRIO B=1) ahead
/// of a handover range and when to clear it. The same code decides in simulation and on the
/// router. Times are seconds on any monotonic clock.
#[pyclass(unsendable, module = "mobipath._core")]
struct PhaDController {
    inner: mobipath_sim::hst::phad::PhaD,
    n: usize,
    last_now: f64,
}

/// Seconds (finite, >= 0) to nanoseconds, or a ValueError naming `field`.
fn secs_to_ns(field: &str, s: f64) -> PyResult<u64> {
    if !s.is_finite() || !(0.0..=1e9).contains(&s) {
        return Err(pyo3::exceptions::PyValueError::new_err(format!(
            "{field} = {s}: must be a finite number of seconds in [0, 1e9]"
        )));
    }
    Ok((s * 1e9).round() as u64)
}

#[pymethods]
impl PhaDController {
    /// `table_csv`: a handover table (as `mobipath hotable learn` writes it; `table_file` names it
    /// in errors). `operators[k]`: the operator subflow k's link belongs to (None = never
    /// excluded). `policy`: paper, queue-aware or resend; `lead_ms`: queue-aware's extra lead in
    /// [0, 10000]; `gps_period_s`: the GPS receiver's fix period in (0, 10].
    #[new]
    #[pyo3(signature = (table_csv, operators, policy = "paper", lead_ms = 0.0, gps_period_s = 0.1, table_file = "table"))]
    fn new(
        py: Python<'_>,
        table_csv: &str,
        operators: Vec<Option<String>>,
        policy: &str,
        lead_ms: f64,
        gps_period_s: f64,
        table_file: &str,
    ) -> PyResult<Self> {
        use mobipath_sim::hst::phad::{PhaD, PhaDConfig, PhaDPolicy};
        use pyo3::exceptions::PyValueError;
        let table = mobipath_sim::hst::table::HandoverTable::from_csv(table_csv, table_file)
            .map_err(|errs| scenario_error(py, table_file, &errs))?;
        let policy = match policy {
            "paper" => PhaDPolicy::Paper,
            "queue-aware" => PhaDPolicy::QueueAware,
            "resend" => PhaDPolicy::Resend,
            other => {
                return Err(PyValueError::new_err(format!(
                    "policy = {other}: must be one of paper, queue-aware, resend"
                )))
            }
        };
        if !lead_ms.is_finite() || !(0.0..=10_000.0).contains(&lead_ms) {
            return Err(PyValueError::new_err(format!(
                "lead_ms = {lead_ms}: must be in [0, 10000]"
            )));
        }
        // NaN fails both comparisons, infinity the second.
        if !(gps_period_s > 0.0 && gps_period_s <= 10.0) {
            return Err(PyValueError::new_err(format!(
                "gps_period_s = {gps_period_s}: must be in (0, 10]"
            )));
        }
        if operators.is_empty() || operators.len() > 64 {
            return Err(PyValueError::new_err(format!(
                "operators: {} given, must be 1 to 64 (one per subflow)",
                operators.len()
            )));
        }
        let n = operators.len();
        let period = secs_to_ns("gps_period_s", gps_period_s)?;
        let inner = PhaD::new(
            PhaDConfig { policy, lead_ms },
            std::rc::Rc::new(table),
            operators,
            period,
        );
        Ok(PhaDController {
            inner,
            n,
            last_now: f64::NEG_INFINITY,
        })
    }

    /// A GPS fix: `now_s` (non-decreasing), the train's position along the track in metres,
    /// each subflow's RTT estimate in seconds (0 = unknown: 100 ms is assumed) and its packets
    /// received so far (the `resend` policy re-sends B=0 until this grows). Returns the MP_PRIO
    /// to send now as (subflow, backup) pairs.
    fn on_fix(&mut self, now_s: f64, pos_m: f64, rtt_s: Vec<f64>, rx: Vec<u64>) -> PyResult<Vec<(usize, bool)>> {
        if !pos_m.is_finite() {
            return Err(pyo3::exceptions::PyValueError::new_err(format!(
                "pos_m = {pos_m}: must be finite"
            )));
        }
        let rtt = self.check(now_s, &rtt_s, &rx)?;
        let now = secs_to_ns("now_s", now_s)?;
        self.last_now = now_s;
        let r = catch_unwind(AssertUnwindSafe(|| self.inner.on_fix(now, pos_m, &rtt, &rx)));
        self.forget_log();
        r.map_err(|p| panic_error("deciding PHA-D's MP_PRIO", p))
    }

    /// A decision between fixes at `now_s` (same clock as the fixes), from the extrapolated
    /// position; nothing more than 2 s after the last fix. Call it every few tens of ms with a
    /// slow (1 Hz) GPS receiver so that B=0 goes out on time.
    fn on_tick(&mut self, now_s: f64, rtt_s: Vec<f64>, rx: Vec<u64>) -> PyResult<Vec<(usize, bool)>> {
        let rtt = self.check(now_s, &rtt_s, &rx)?;
        let now = secs_to_ns("now_s", now_s)?;
        self.last_now = now_s;
        let r = catch_unwind(AssertUnwindSafe(|| self.inner.on_tick(now, &rtt, &rx)));
        self.forget_log();
        r.map_err(|p| panic_error("deciding PHA-D's MP_PRIO", p))
    }
}

impl PhaDController {
    /// The simulator's wrapper logs every MP_PRIO for the run's summary; a router returns each
    /// decision to its caller and runs for days, so the log is dropped after every call
    /// (memory stays bounded; nothing here reads it).
    fn forget_log(&mut self) {
        self.inner.log.clear();
    }

    /// The checks both calls share: time does not go back, one RTT and one count per subflow.
    fn check(&self, now_s: f64, rtt_s: &[f64], rx: &[u64]) -> PyResult<Vec<u64>> {
        use pyo3::exceptions::PyValueError;
        secs_to_ns("now_s", now_s)?;
        if now_s < self.last_now {
            return Err(PyValueError::new_err(format!(
                "now_s = {now_s}: went back in time (last call at {})",
                self.last_now
            )));
        }
        if rtt_s.len() != self.n || rx.len() != self.n {
            return Err(PyValueError::new_err(format!(
                "rtt_s and rx: one value per subflow ({}), got {} and {}",
                self.n,
                rtt_s.len(),
                rx.len()
            )));
        }
        rtt_s.iter().map(|&r| secs_to_ns("rtt_s", r)).collect()
    }
}

#[pymodule]
fn _core(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    m.add_function(wrap_pyfunction!(validate, m)?)?;
    m.add_function(wrap_pyfunction!(schema, m)?)?;
    m.add_function(wrap_pyfunction!(run, m)?)?;
    m.add_function(wrap_pyfunction!(json::canonical_json, m)?)?;
    m.add_function(wrap_pyfunction!(heap_bytes, m)?)?;
    m.add_function(wrap_pyfunction!(learn_handover_table, m)?)?;
    m.add_function(wrap_pyfunction!(handover_table_json, m)?)?;
    m.add_function(wrap_pyfunction!(effective_links, m)?)?;
    m.add_function(wrap_pyfunction!(plan, m)?)?;
    m.add_function(wrap_pyfunction!(names, m)?)?;
    m.add_function(wrap_pyfunction!(scenario_seed, m)?)?;
    m.add_function(wrap_pyfunction!(p1_worked_examples, m)?)?;
    m.add_function(wrap_pyfunction!(emulator_main, m)?)?;
    m.add_function(wrap_pyfunction!(proxy_main, m)?)?;
    m.add_function(wrap_pyfunction!(mptcp_set_backup, m)?)?;
    m.add_function(wrap_pyfunction!(mptcp_endpoints, m)?)?;
    m.add_function(wrap_pyfunction!(learn_handover_table_recorded, m)?)?;
    m.add_class::<PhaDController>()?;
    m.add_class::<TimeSeries>()?;
    m.add("ScenarioError", py.get_type_bound::<ScenarioError>())?;
    m.add("InternalError", py.get_type_bound::<InternalError>())?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    // Git revision of the source tree this module was built from ("unknown" outside a checkout).
    m.add("GIT_REVISION", env!("MOBIPATH_GIT_REVISION"))?;
    // Cargo profile of this build: benchmarks warn when it is not "release".
    m.add("BUILD_PROFILE", env!("MOBIPATH_BUILD_PROFILE"))?;
    // Profile-guided build: what the profile was trained on ("" = not profile-guided).
    m.add("BUILD_PGO", env!("MOBIPATH_BUILD_PGO"))?;
    Ok(())
}
