//! SSTables (being built).
