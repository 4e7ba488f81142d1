//! One set of bounds: the JSON Schema (`mobipath schema`) states each numeric field's range as
//! its documentation states it and the validator enforces it. schemars writes only what the Rust
//! type implies (`minimum: 0` for a `u32`, whatever the field allows); [`apply`] replaces that
//! with the range the field's doc comment states ("in [64, 9000]", "in (0, 86400]"), which
//! `tests/scenario_bounds.rs` checks against the validator field by field.
use serde_json::{Map, Value};

/// A documented range: `(lo, lo included, hi, hi included)`.
pub type Range = (f64, bool, f64, bool);

/// The first range a description states as "in [a, b]" (or with round brackets for an excluded
/// end), where both ends are numbers (`1e9`, `0.000001`); None otherwise.
pub fn documented_range(description: &str) -> Option<Range> {
    let mut rest = description;
    while let Some(at) = rest.find("in ") {
        let after = &rest[at + 3..];
        rest = &rest[at + 3..];
        let open = match after.chars().next() {
            Some('[') => true,
            Some('(') => false,
            _ => continue,
        };
        let Some(end) = after.find([']', ')']) else { continue };
        let close = after.as_bytes()[end] == b']';
        let inner = &after[1..end];
        let Some((a, b)) = inner.split_once(',') else { continue };
        let (Ok(lo), Ok(hi)) = (
            a.trim().replace('_', "").parse::<f64>(),
            b.trim().replace('_', "").parse::<f64>(),
        ) else {
            continue;
        };
        if lo <= hi {
            return Some((lo, open, hi, close));
        }
    }
    None
}

fn is_numeric(m: &Map<String, Value>) -> bool {
    let numeric = |t: &Value| matches!(t.as_str(), Some("integer" | "number"));
    match m.get("type") {
        Some(Value::Array(a)) => a.iter().any(numeric),
        Some(t) => numeric(t),
        None => false,
    }
}

/// Sets `minimum`/`maximum` (or the exclusive forms) of every numeric property whose description
/// states a range.
pub fn apply(schema: &mut Value) {
    match schema {
        Value::Object(m) => {
            if is_numeric(m) {
                if let Some((lo, lo_in, hi, hi_in)) =
                    m.get("description").and_then(|d| d.as_str()).and_then(documented_range)
                {
                    for k in ["minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"] {
                        m.remove(k);
                    }
                    m.insert(if lo_in { "minimum" } else { "exclusiveMinimum" }.into(), num(lo));
                    m.insert(if hi_in { "maximum" } else { "exclusiveMaximum" }.into(), num(hi));
                }
            }
            m.values_mut().for_each(apply);
        }
        Value::Array(a) => a.iter_mut().for_each(apply),
        _ => {}
    }
}

fn num(x: f64) -> Value {
    if x.fract() == 0.0 && x.abs() < 9e15 {
        Value::from(x as i64)
    } else {
        Value::from(x)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_are_read_from_descriptions() {
        assert_eq!(
            documented_range("Payload bytes per segment, in [64, 9000]; packets"),
            Some((64.0, true, 9000.0, true))
        );
        assert_eq!(
            documented_range("Time between handoffs, s, in (0, 86400]."),
            Some((0.0, false, 86400.0, true))
        );
        assert_eq!(
            documented_range("Sojourn in seconds, in [0.000001, 1e9]."),
            Some((0.000001, true, 1e9, true))
        );
        assert_eq!(documented_range("Receive buffer in bytes, in [2·MSS, 1 GiB]"), None);
        assert_eq!(documented_range("no range here"), None);
    }
}
