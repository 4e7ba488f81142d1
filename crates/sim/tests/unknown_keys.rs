//! Every table of a scenario refuses keys it does not know, naming the key's path: a typo such
//! as `dealy_ms` never runs silently with the default. The test inserts an unknown key into
//! every table (and inline table) of every scenario in the repository in turn.
use mobipath_sim::api::validate_toml;
use std::path::{Path, PathBuf};

fn scenarios() -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let mut out = Vec::new();
    let mut stack = vec![root.join("scenarios"), root.join("tests/golden/scenarios")];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                // scenarios/sweeps/ holds sweep definitions (`mobipath sweep`), not scenarios.
                if p.file_name().is_some_and(|n| n == "sweeps") {
                    continue;
                }
                stack.push(p);
            } else if p.extension().is_some_and(|x| x == "toml") {
                out.push(p);
            }
        }
    }
    out.sort();
    out
}

/// Paths (as key/index lists) of every table in `v`, the root included.
fn tables(v: &toml::Value, here: Vec<String>, out: &mut Vec<Vec<String>>) {
    match v {
        toml::Value::Table(t) => {
            out.push(here.clone());
            for (k, x) in t {
                let mut p = here.clone();
                p.push(k.clone());
                tables(x, p, out);
            }
        }
        toml::Value::Array(a) => {
            for (i, x) in a.iter().enumerate() {
                let mut p = here.clone();
                p.push(format!("[{i}]"));
                tables(x, p, out);
            }
        }
        _ => {}
    }
}

fn table_at<'a>(v: &'a mut toml::Value, path: &[String]) -> &'a mut toml::Table {
    let mut cur = v;
    for seg in path {
        cur = if let Some(i) = seg.strip_prefix('[').and_then(|s| s.strip_suffix(']')) {
            &mut cur.as_array_mut().unwrap()[i.parse::<usize>().unwrap()]
        } else {
            cur.as_table_mut().unwrap().get_mut(seg).unwrap()
        };
    }
    cur.as_table_mut().unwrap()
}

#[test]
fn an_unknown_key_in_any_table_is_refused_with_its_path() {
    let files = scenarios();
    assert!(files.len() >= 15, "{files:?}");
    let mut missed = Vec::new();
    let mut checked = 0;
    for f in &files {
        let text = std::fs::read_to_string(f).unwrap();
        let base = f.parent().unwrap();
        assert!(
            validate_toml(&text, "s.toml", base).is_empty(),
            "{} does not validate",
            f.display()
        );
        let doc: toml::Value = toml::from_str(&text).unwrap();
        let mut paths = Vec::new();
        tables(&doc, Vec::new(), &mut paths);
        for p in paths {
            let mut d = doc.clone();
            table_at(&mut d, &p).insert("zzz_typo".into(), toml::Value::Integer(1));
            let errs = validate_toml(&toml::to_string(&d).unwrap(), "s.toml", base);
            checked += 1;
            // The error names the key, under the path of the table it was put in.
            let want_tail: String = p
                .iter()
                .filter(|s| !s.starts_with('['))
                .cloned()
                .chain(["zzz_typo".to_string()])
                .collect::<Vec<_>>()
                .join(".");
            let ok = errs.iter().any(|e| {
                let flat: String = e
                    .field
                    .split('.')
                    .map(|s| s.split('[').next().unwrap_or(s))
                    .collect::<Vec<_>>()
                    .join(".");
                (e.field.ends_with("zzz_typo") && flat.ends_with(&want_tail)) || e.message.contains("zzz_typo")
            });
            if !ok {
                missed.push(format!("{}: {}: {:?}", f.display(), p.join("."), errs));
            }
        }
    }
    assert!(
        missed.is_empty(),
        "{} of {checked} unknown keys not refused by path:\n{}",
        missed.len(),
        missed.join("\n")
    );
}
