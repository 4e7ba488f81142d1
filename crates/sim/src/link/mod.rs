//! Links: rate, delay, queue and impairments (placeholder, being written).
