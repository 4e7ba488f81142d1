//! One set of bounds: the JSON Schema (`mobipath schema`) and the validator agree on the range of
//! every numeric field. The test walks the schema's tables of a flow, its TCP and receiver
//! options, a link and the output; for each numeric field with a stated range it checks the
//! schema carries that range and that the validator refuses a value just outside either end,
//! naming the field.
use mobipath_sim::api::{schema_json, validate_toml};
use serde_json::Value;
use std::path::Path;

const GOOD: &str = r#"
duration_s = 10
[output]
bin_ms = 100
[[links]]
name = "l"
rate_mbps = 10
delay_ms = 10
[[paths]]
name = "p"
links = ["l"]
[[flows]]
name = "f"
path = "p"
cc = "cubic"
traffic = { kind = "bulk" }
tcp = {}
receiver = {}
"#;

fn bounds(node: &Value) -> Option<(f64, bool, f64, bool)> {
    let n = |k: &str| node.get(k).and_then(Value::as_f64);
    let (lo, lo_in) = match (n("minimum"), n("exclusiveMinimum")) {
        (Some(v), _) => (v, true),
        (_, Some(v)) => (v, false),
        _ => return None,
    };
    let (hi, hi_in) = match (n("maximum"), n("exclusiveMaximum")) {
        (Some(v), _) => (v, true),
        (_, Some(v)) => (v, false),
        _ => return None,
    };
    Some((lo, lo_in, hi, hi_in))
}

fn is_integer(node: &Value) -> bool {
    match node.get("type") {
        Some(Value::String(t)) => t == "integer",
        Some(Value::Array(a)) => a.iter().any(|t| t == "integer"),
        _ => false,
    }
}

/// Errors for GOOD with `table.key = v` (`table` a dotted path into it).
fn errors_with(table: &[&str], key: &str, v: toml::Value) -> Vec<String> {
    let mut doc: toml::Table = GOOD.parse().unwrap();
    let mut t = &mut doc;
    for seg in table {
        let next = t.get_mut(*seg).unwrap();
        t = match next {
            toml::Value::Array(a) => a[0].as_table_mut().unwrap(),
            toml::Value::Table(x) => x,
            _ => unreachable!(),
        };
    }
    t.insert(key.to_string(), v);
    validate_toml(&toml::to_string(&doc).unwrap(), "t.toml", Path::new("."))
        .into_iter()
        .map(|e| e.to_string())
        .collect()
}

#[test]
fn the_schema_and_the_validator_agree_on_every_numeric_range() {
    let schema: Value = serde_json::from_str(&schema_json()).unwrap();
    let defs = &schema["definitions"];
    let tables: &[(&str, &[&str], &str)] = &[
        ("TcpOptions", &["flows", "tcp"], "flows[0].tcp"),
        ("ReceiverOptions", &["flows", "receiver"], "flows[0].receiver"),
        ("LinkConfig", &["links"], "links[0]"),
        ("OutputConfig", &["output"], "output"),
    ];
    let mut checked = 0;
    let mut disagree = Vec::new();
    for (def, table, prefix) in tables {
        let props = defs[def]["properties"].as_object().unwrap_or_else(|| panic!("{def}"));
        for (key, node) in props {
            let Some((lo, lo_in, hi, hi_in)) = bounds(node) else {
                continue;
            };
            let int = is_integer(node);
            // Unsigned fields: schemars' own `minimum: 0` with no stated range has no maximum.
            let step = |x: f64| if int { 1.0 } else { (x.abs() * 1e-3).max(1e-9) };
            let outside = [
                if lo_in { lo - step(lo) } else { lo },
                if hi_in { hi + step(hi) } else { hi },
            ];
            for v in outside {
                let value = if int {
                    toml::Value::Integer(v as i64)
                } else {
                    toml::Value::Float(v)
                };
                let field = format!("{prefix}.{key}");
                let e = errors_with(table, key, value.clone());
                if !e.iter().any(|x| x.starts_with(&field)) {
                    disagree.push(format!(
                        "{field} = {value}: schema range {lo}..{hi} but accepted ({e:?})"
                    ));
                }
                checked += 1;
            }
        }
    }
    assert!(
        checked >= 16,
        "only {checked} values checked: the walk found too few fields"
    );
    assert!(disagree.is_empty(), "{disagree:#?}");
}

#[test]
fn the_schema_states_the_validators_range_not_the_types() {
    let schema: Value = serde_json::from_str(&schema_json()).unwrap();
    let mss = &schema["definitions"]["TcpOptions"]["properties"]["mss_bytes"];
    assert_eq!(bounds(mss), Some((64.0, true, 9000.0, true)), "{mss}");
    let good_s = schema.to_string();
    assert!(good_s.contains("\"exclusiveMinimum\""), "no excluded bound anywhere");
}
