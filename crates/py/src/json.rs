//! JSON across the boundary without Python's `json` module, which imports `re` (with `enum`,
//! `functools` and `collections`, about 5 ms of every `mobipath run`).
//!
//! - [`to_python`]: a run's summary and resolved scenario as Python objects, straight from the
//!   simulator's `serde_json::Value` (no text in between). The same objects `json.loads` makes
//!   of `serde_json`'s text: numbers that are integers there become `int`, the others `float`
//!   (the text holds each float's shortest round-trip digits, so Python reads back the same
//!   value), objects keep their order.
//! - [`canonical_json`]: mobipath's canonical JSON text (`mobipath.jsonfmt.dumps`), byte for byte
//!   what `json.dumps(value, sort_keys=True, indent=2, ensure_ascii=False, allow_nan=False)`
//!   writes (Lib/json/encoder.py): keys sorted by code point, two-space indentation, `", "`-free
//!   line ends, `{}` and `[]` for empty containers, strings escaped as the C encoder's
//!   `encode_basestring` does, numbers as `int.__repr__` / `float.__repr__` give them (asked of
//!   Python, so the digits are Python's own). `tests/python/test_jsonfmt.py` compares the two on
//!   generated values.
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict, PyFloat, PyList, PyLong, PyString, PyTuple};
use serde_json::Value;

/// A JSON value as the Python objects `json.loads` would give for its text.
pub fn to_python(py: Python<'_>, v: &Value) -> PyResult<PyObject> {
    Ok(match v {
        Value::Null => py.None(),
        Value::Bool(b) => b.into_py(py),
        Value::Number(n) => {
            if let Some(u) = n.as_u64() {
                u.into_py(py)
            } else if let Some(i) = n.as_i64() {
                i.into_py(py)
            } else {
                n.as_f64().unwrap_or(f64::NAN).into_py(py)
            }
        }
        Value::String(s) => s.into_py(py),
        Value::Array(a) => {
            let items = a.iter().map(|x| to_python(py, x)).collect::<PyResult<Vec<_>>>()?;
            PyList::new_bound(py, items).into_py(py)
        }
        Value::Object(m) => {
            let d = PyDict::new_bound(py);
            for (k, x) in m {
                d.set_item(k, to_python(py, x)?)?;
            }
            d.into_py(py)
        }
    })
}

/// Canonical JSON text of a plain value: dicts with `str` keys, lists, tuples, `str`, `int`,
/// finite `float`, `bool` and `None` (`mobipath.jsonfmt.normalize` makes anything else plain
/// first). Raises `TypeError` for other types or keys, `ValueError` for NaN and infinities.
#[pyfunction]
pub fn canonical_json(value: &Bound<'_, PyAny>) -> PyResult<String> {
    let mut out = String::with_capacity(4096);
    write_value(value, 0, &mut out)?;
    Ok(out)
}

fn newline(depth: usize, out: &mut String) {
    out.push('\n');
    for _ in 0..depth {
        out.push_str("  ");
    }
}

fn write_value(v: &Bound<'_, PyAny>, depth: usize, out: &mut String) -> PyResult<()> {
    if v.is_none() {
        out.push_str("null");
    } else if let Ok(b) = v.downcast::<PyBool>() {
        out.push_str(if b.is_true() { "true" } else { "false" });
    } else if let Ok(s) = v.downcast::<PyString>() {
        write_str(&s.to_cow()?, out);
    } else if v.is_instance_of::<PyLong>() {
        // json.encoder: int.__repr__ (exact at any size).
        out.push_str(
            &v.py()
                .get_type_bound::<PyLong>()
                .call_method1("__repr__", (v,))?
                .downcast::<PyString>()?
                .to_cow()?,
        );
    } else if let Ok(f) = v.downcast::<PyFloat>() {
        let x = f.value();
        if !x.is_finite() {
            return Err(PyValueError::new_err(format!(
                "Out of range float values are not JSON compliant: {x}"
            )));
        }
        // json.encoder: float.__repr__, Python's shortest round-trip form ("1e-05", "100.0").
        out.push_str(
            &v.py()
                .get_type_bound::<PyFloat>()
                .call_method1("__repr__", (v,))?
                .downcast::<PyString>()?
                .to_cow()?,
        );
    } else if let Ok(d) = v.downcast::<PyDict>() {
        let mut items = Vec::with_capacity(d.len());
        for (k, x) in d.iter() {
            let key = k.downcast::<PyString>().map_err(|_| {
                PyTypeError::new_err(format!(
                    "keys must be str, not {}",
                    k.get_type().name().map(|n| n.to_string()).unwrap_or_default()
                ))
            })?;
            items.push((key.to_cow()?.into_owned(), x));
        }
        // sort_keys: Python compares str by code point, which is UTF-8 byte order.
        items.sort_by(|a, b| a.0.cmp(&b.0));
        if items.is_empty() {
            out.push_str("{}");
            return Ok(());
        }
        out.push('{');
        for (i, (k, x)) in items.iter().enumerate() {
            if i > 0 {
                out.push(',');
            }
            newline(depth + 1, out);
            write_str(k, out);
            out.push_str(": ");
            write_value(x, depth + 1, out)?;
        }
        newline(depth, out);
        out.push('}');
    } else if v.is_instance_of::<PyList>() || v.is_instance_of::<PyTuple>() {
        let n = v.len()?;
        if n == 0 {
            out.push_str("[]");
            return Ok(());
        }
        out.push('[');
        for (i, x) in v.iter()?.enumerate() {
            if i > 0 {
                out.push(',');
            }
            newline(depth + 1, out);
            write_value(&x?, depth + 1, out)?;
        }
        newline(depth, out);
        out.push(']');
    } else {
        let name = v.get_type().name().map(|n| n.to_string()).unwrap_or_default();
        return Err(PyTypeError::new_err(format!(
            "Object of type {name} is not JSON serializable"
        )));
    }
    Ok(())
}

/// A JSON string as Python's `encode_basestring` writes it (ensure_ascii=False): `"` and `\`
/// escaped, `\b \f \n \r \t` by name, other control characters below U+0020 as `\u00XX`
/// (lower-case hex); everything else as is.
fn write_str(s: &str, out: &mut String) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\u{08}' => out.push_str("\\b"),
            '\u{0c}' => out.push_str("\\f"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
}
