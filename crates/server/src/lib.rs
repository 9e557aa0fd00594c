//! varve-server (being built).
