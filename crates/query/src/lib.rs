//! varve-query (being built).
