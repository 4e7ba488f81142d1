//! Configuration errors that name the field, the offending value and what is allowed.
use std::fmt;

/// Longest value an error message quotes in full.
pub const MAX_VALUE_CHARS: usize = 80;

#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct ConfigError {
    /// Dotted path of the field, e.g. `links[0].loss.p` (or a file name for trace errors).
    pub field: String,
    /// The value found, as written (empty if the field is missing).
    pub value: String,
    /// What is wrong and what is allowed, e.g. "must be in [0, 1]".
    pub message: String,
}

impl ConfigError {
    /// A value longer than [`MAX_VALUE_CHARS`] is shown cut, with its length.
    pub fn new(field: impl Into<String>, value: impl ToString, message: impl Into<String>) -> Self {
        let mut value = value.to_string();
        let n = value.chars().count();
        if n > MAX_VALUE_CHARS {
            value = format!(
                "{}... ({n} characters)",
                value.chars().take(MAX_VALUE_CHARS - 20).collect::<String>()
            );
        }
        Self {
            field: field.into(),
            value,
            message: message.into(),
        }
    }
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.field.is_empty() {
            // About the whole file (e.g. not TOML): the file is named by whoever prints it.
            write!(f, "{}", self.message)
        } else if self.value.is_empty() {
            write!(f, "{}: {}", self.field, self.message)
        } else {
            write!(f, "{} = {}: {}", self.field, self.value, self.message)
        }
    }
}

impl std::error::Error for ConfigError {}

/// Collects errors while validating; `check` pushes an error when a condition fails.
#[derive(Default, Debug)]
pub struct Errors(pub Vec<ConfigError>);

impl Errors {
    pub fn push(&mut self, e: ConfigError) {
        self.0.push(e)
    }
    pub fn check(&mut self, ok: bool, field: impl Into<String>, value: impl ToString, message: &str) {
        if !ok {
            self.0.push(ConfigError::new(field, value, message));
        }
    }
    /// Checks `lo <= v <= hi` (and that v is finite).
    pub fn range(&mut self, field: impl Into<String>, v: f64, lo: f64, hi: f64) {
        if !(v.is_finite() && v >= lo && v <= hi) {
            self.0.push(ConfigError::new(
                field,
                fmt_num(v),
                format!("must be in [{}, {}]", fmt_num(lo), fmt_num(hi)),
            ));
        }
    }
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
    pub fn into_result(self) -> Result<(), Vec<ConfigError>> {
        if self.0.is_empty() {
            Ok(())
        } else {
            Err(self.0)
        }
    }
}

pub fn fmt_num(v: f64) -> String {
    if v == f64::INFINITY {
        "inf".into()
    } else if v.fract() == 0.0 && v.abs() < 1e15 {
        format!("{}", v as i64)
    } else {
        format!("{}", v)
    }
}
