//! A run's time series as a Python object that stays in Rust until asked for.
//!
//! Why: `mobipath run` used to turn every column into a Python list, build a polars DataFrame
//! and let polars write `timeseries.parquet` — importing polars alone cost more than a short
//! simulation. Now the columns stay here; [`TimeSeries::write_parquet`] writes the
//! file directly with the `parquet` crate, and Python converts a column to a list only when
//! code reads it (`ts["value"]`, `ts.items()`), e.g. to build a DataFrame on demand.
//!
//! The file has the layout polars wrote before: one row group per [`ROW_GROUP_ROWS`] rows,
//! `time_s`/`value` as DOUBLE, `kind`/`name`/`metric` (and any extra string column) as
//! BYTE_ARRAY with the STRING logical type, dictionary encoding, Snappy compression (the
//! Parquet ecosystem's default; pure Rust, unlike zstd). Columns are
//! REQUIRED (the simulator never emits nulls); polars, pyarrow and DuckDB read them as
//! Float64/Utf8, the same as the old optional columns.
use mobipath_sim::api::Column;
use parquet::basic::{Compression, LogicalType, Repetition, Type as PhysicalType};
use parquet::data_type::{ByteArray, ByteArrayType, DoubleType};
use parquet::file::properties::WriterProperties;
use parquet::file::writer::SerializedFileWriter;
use parquet::schema::types::Type;
use pyo3::exceptions::{PyKeyError, PyOSError};
use pyo3::prelude::*;
use pyo3::types::PyList;
use std::fs::File;
use std::io::BufWriter;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Rows per Parquet row group: bounds the writer's buffers on hour-long runs.
pub const ROW_GROUP_ROWS: usize = 1 << 20;

/// The long-form time series of one run (columns `time_s`, `kind`, `name`, `metric`, `value`,
/// then any extra columns), readable like a read-only dict of column name → list.
#[pyclass(module = "mobipath._core", frozen)]
pub struct TimeSeries {
    columns: Vec<(String, Column)>,
}

impl TimeSeries {
    pub fn new(columns: Vec<(String, Column)>) -> Self {
        TimeSeries { columns }
    }

    fn rows(&self) -> usize {
        self.columns.first().map_or(0, |(_, c)| column_len(c))
    }

    fn find(&self, name: &str) -> Option<&Column> {
        self.columns.iter().find(|(n, _)| n == name).map(|(_, c)| c)
    }
}

fn column_len(c: &Column) -> usize {
    match c {
        Column::F64(v) => v.len(),
        Column::Str(v) => v.len(),
    }
}

fn to_list(py: Python<'_>, col: &Column) -> PyObject {
    match col {
        Column::F64(v) => PyList::new_bound(py, v.iter().copied()).into_any().unbind(),
        Column::Str(v) => PyList::new_bound(py, v.iter()).into_any().unbind(),
    }
}

#[pymethods]
impl TimeSeries {
    /// Number of columns (0 for a run with no time series), as for a dict.
    fn __len__(&self) -> usize {
        self.columns.len()
    }

    fn __contains__(&self, name: &str) -> bool {
        self.find(name).is_some()
    }

    /// The column `name` as a new list.
    fn __getitem__(&self, py: Python<'_>, name: &str) -> PyResult<PyObject> {
        self.find(name)
            .map(|c| to_list(py, c))
            .ok_or_else(|| PyKeyError::new_err(name.to_string()))
    }

    /// The column `name` as a list, or `default`.
    #[pyo3(signature = (name, default = None))]
    fn get(&self, py: Python<'_>, name: &str, default: Option<PyObject>) -> PyObject {
        match self.find(name) {
            Some(c) => to_list(py, c),
            None => default.unwrap_or_else(|| py.None()),
        }
    }

    fn keys(&self) -> Vec<String> {
        self.columns.iter().map(|(n, _)| n.clone()).collect()
    }

    fn __iter__(slf: PyRef<'_, Self>) -> PyResult<PyObject> {
        let py = slf.py();
        let keys = PyList::new_bound(py, slf.columns.iter().map(|(n, _)| n.as_str()));
        Ok(keys.as_any().iter()?.into_any().unbind())
    }

    /// (name, list) pairs, in column order.
    fn items(&self, py: Python<'_>) -> Vec<(String, PyObject)> {
        self.columns.iter().map(|(n, c)| (n.clone(), to_list(py, c))).collect()
    }

    /// Number of rows.
    #[getter]
    fn height(&self) -> usize {
        self.rows()
    }

    /// Writes the table to `path` as Parquet (atomically: a temporary file renamed into place).
    /// Raises `OSError` if the file cannot be written.
    fn write_parquet(&self, py: Python<'_>, path: PathBuf) -> PyResult<()> {
        py.allow_threads(|| write_atomically(&self.columns, &path))
            .map_err(|e| PyOSError::new_err(format!("{}: {e}", path.display())))
    }
}

fn write_atomically(columns: &[(String, Column)], path: &Path) -> Result<(), String> {
    let mut tmp = path.as_os_str().to_owned();
    tmp.push(".tmp");
    let tmp = PathBuf::from(tmp);
    let result = write_file(columns, &tmp).and_then(|_| std::fs::rename(&tmp, path).map_err(|e| e.to_string()));
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result
}

/// Writes `columns` to a new Parquet file at `path`.
pub fn write_file(columns: &[(String, Column)], path: &Path) -> Result<(), String> {
    let rows = columns.first().map_or(0, |(_, c)| column_len(c));
    if let Some((name, c)) = columns.iter().find(|(_, c)| column_len(c) != rows) {
        return Err(format!("column {name} has {} rows, expected {rows}", column_len(c)));
    }
    let fields = columns
        .iter()
        .map(|(name, col)| {
            let b = match col {
                Column::F64(_) => Type::primitive_type_builder(name, PhysicalType::DOUBLE),
                Column::Str(_) => Type::primitive_type_builder(name, PhysicalType::BYTE_ARRAY)
                    .with_logical_type(Some(LogicalType::String)),
            };
            b.with_repetition(Repetition::REQUIRED)
                .build()
                .map(Arc::new)
                .map_err(|e| e.to_string())
        })
        .collect::<Result<Vec<_>, _>>()?;
    let schema = Type::group_type_builder("schema")
        .with_fields(fields)
        .build()
        .map_err(|e| e.to_string())?;
    let props = WriterProperties::builder()
        .set_compression(Compression::SNAPPY)
        .set_created_by(format!("mobipath {}", env!("CARGO_PKG_VERSION")))
        .build();
    let file = File::create(path).map_err(|e| e.to_string())?;
    let mut writer = SerializedFileWriter::new(BufWriter::new(file), Arc::new(schema), Arc::new(props))
        .map_err(|e| e.to_string())?;
    let mut start = 0;
    // An empty table still gets its schema (and no row group), as polars writes it.
    while start < rows {
        let end = (start + ROW_GROUP_ROWS).min(rows);
        let mut group = writer.next_row_group().map_err(|e| e.to_string())?;
        for (_, col) in columns {
            let mut w = group
                .next_column()
                .map_err(|e| e.to_string())?
                .ok_or("schema has fewer columns than the table")?;
            match col {
                Column::F64(v) => {
                    w.typed::<DoubleType>()
                        .write_batch(&v[start..end], None, None)
                        .map_err(|e| e.to_string())?;
                }
                Column::Str(v) => {
                    let values: Vec<ByteArray> = v[start..end]
                        .iter()
                        .map(|s| ByteArray::from(s.as_bytes().to_vec()))
                        .collect();
                    w.typed::<ByteArrayType>()
                        .write_batch(&values, None, None)
                        .map_err(|e| e.to_string())?;
                }
            }
            w.close().map_err(|e| e.to_string())?;
        }
        group.close().map_err(|e| e.to_string())?;
        start = end;
    }
    let mut out = writer.into_inner().map_err(|e| e.to_string())?;
    std::io::Write::flush(&mut out).map_err(|e| e.to_string())
}
