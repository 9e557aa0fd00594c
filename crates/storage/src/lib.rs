//! varve-storage (being built).
