//! What the coordinator counts, as the node's metrics
//! (docs/design/metrics.md): requests by whether this node held a replica
//! of the key (token-aware drivers keep `not_replica` at zero),
//! speculative retries, digest mismatches and blocking read repairs.
//! Unavailables and timeouts are counted per operation by the query layer,
//! which sees every error the coordinator returns.

use std::sync::Arc;

use varve_metrics::names;
use varve_metrics::{Counter, Registry};

/// The coordinator's counters.
#[derive(Debug, Clone)]
pub struct CoordinatorMetrics {
    pub replica_requests: Arc<Counter>,
    pub not_replica_requests: Arc<Counter>,
    pub speculative_retries: Arc<Counter>,
    pub digest_mismatches: Arc<Counter>,
    pub read_repairs: Arc<Counter>,
}

impl CoordinatorMetrics {
    /// Counters registered in `registry`.
    pub fn new(registry: &Registry) -> CoordinatorMetrics {
        let placement =
            |p| registry.counter(names::COORDINATOR_REQUESTS, &[(names::LABEL_PLACEMENT, p)]);
        CoordinatorMetrics {
            replica_requests: placement(names::PLACEMENT_REPLICA),
            not_replica_requests: placement(names::PLACEMENT_NOT_REPLICA),
            speculative_retries: registry.counter(names::SPECULATIVE_RETRIES, &[]),
            digest_mismatches: registry.counter(names::READ_DIGEST_MISMATCHES, &[]),
            read_repairs: registry.counter(names::READ_REPAIRS_BLOCKING, &[]),
        }
    }

    /// Counters of their own, in no registry (tests, simulations).
    pub fn detached() -> CoordinatorMetrics {
        CoordinatorMetrics::new(&Registry::new())
    }
}
