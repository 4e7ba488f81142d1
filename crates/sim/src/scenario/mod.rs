//! Scenario files (placeholder).
use crate::error::ConfigError;
use std::path::Path;
pub struct Scenario { pub seed: u64 }
impl Scenario {
    pub fn load(_text: &str, _file: &str, _base: &Path) -> Result<Scenario, Vec<ConfigError>> {
        Err(vec![ConfigError::new("scenario", "", "not implemented yet")])
    }
}
pub fn schema_json() -> String { "{}".into() }
