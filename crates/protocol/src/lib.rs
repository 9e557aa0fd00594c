//! varve-protocol (being built).
