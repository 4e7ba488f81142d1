//! High-speed-train mobility, radio and handover model (being written).
