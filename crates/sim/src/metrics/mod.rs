//! Metrics collection (placeholder).
