//! What the coordinator counts, as the node's metrics
//! (docs/design/metrics.md): requests by whether this node held a replica
//! of the key (token-aware drivers keep `not_replica` at zero),
//! speculative retries, digest mismatches, blocking read repairs and
//! short read protection's extra reads; and
//! Paxos' unfinished rounds finished, unknown results, backoffs, the
//! time of each phase, statements forwarded to a partition's home, and the
//! two-round path's outcomes and refusals.
//! Unavailables and timeouts are counted per operation by the query layer,
//! which sees every error the coordinator returns.

use std::sync::Arc;

use varve_metrics::names;
use varve_metrics::{Counter, LatencyHistogram, Registry};

/// The coordinator's counters.
#[derive(Debug, Clone)]
pub struct CoordinatorMetrics {
    pub replica_requests: Arc<Counter>,
    pub not_replica_requests: Arc<Counter>,
    pub speculative_retries: Arc<Counter>,
    pub digest_mismatches: Arc<Counter>,
    pub read_repairs: Arc<Counter>,
    /// Reads that read on past a replica's row limit (short reads).
    pub short_read_rounds: Arc<Counter>,
    /// Paxos (docs/design/paxos.md): per operation, SERIAL reads first
    /// then conditional writes.
    pub cas_unfinished_commits: [Arc<Counter>; 2],
    pub cas_unknown_results: Arc<Counter>,
    pub cas_backoff: [Arc<LatencyHistogram>; 2],
    /// Prepare (with its read), propose, commit.
    pub paxos_phases: [Arc<LatencyHistogram>; 3],
    /// Statements per round that decided any.
    pub paxos_round_statements: Arc<LatencyHistogram>,
    /// Conditional statements handed to their partition's home replica,
    /// and those this node ran as the home of others'.
    pub cas_forwarded: Arc<Counter>,
    pub cas_forwards_served: Arc<Counter>,
    pub cas_forwards_refused: Arc<Counter>,
    /// The two-round path (docs/design/paxos-two-rounds.md): applied,
    /// checked, fallback, unknown; and refusals by the check that failed.
    pub cas_two_round: [Arc<Counter>; 4],
    pub cas_check_refusals: [Arc<Counter>; 4],
}

impl CoordinatorMetrics {
    /// Counters registered in `registry`.
    pub fn new(registry: &Registry) -> CoordinatorMetrics {
        let placement =
            |p| registry.counter(names::COORDINATOR_REQUESTS, &[(names::LABEL_PLACEMENT, p)]);
        let cas_ops = [names::OP_CAS_READ, names::OP_CAS_WRITE];
        CoordinatorMetrics {
            replica_requests: placement(names::PLACEMENT_REPLICA),
            not_replica_requests: placement(names::PLACEMENT_NOT_REPLICA),
            speculative_retries: registry.counter(names::SPECULATIVE_RETRIES, &[]),
            digest_mismatches: registry.counter(names::READ_DIGEST_MISMATCHES, &[]),
            read_repairs: registry.counter(names::READ_REPAIRS_BLOCKING, &[]),
            short_read_rounds: registry.counter(names::SHORT_READ_ROUNDS, &[]),
            cas_unfinished_commits: cas_ops.map(|op| {
                registry.counter(
                    names::CAS_UNFINISHED_COMMITS,
                    &[(names::LABEL_OPERATION, op)],
                )
            }),
            cas_unknown_results: registry.counter(
                names::CAS_UNKNOWN_RESULTS,
                &[(names::LABEL_OPERATION, names::OP_CAS_WRITE)],
            ),
            cas_backoff: cas_ops
                .map(|op| registry.latency(names::CAS_BACKOFF, &[(names::LABEL_OPERATION, op)])),
            paxos_phases: [
                names::PHASE_PREPARE,
                names::PHASE_PROPOSE,
                names::PHASE_COMMIT,
            ]
            .map(|p| registry.latency(names::PAXOS_PHASE_LATENCY, &[(names::LABEL_PHASE, p)])),
            paxos_round_statements: registry.histogram(names::PAXOS_ROUND_STATEMENTS, &[]),
            cas_forwarded: registry.counter(names::CAS_FORWARDED, &[]),
            cas_forwards_served: registry.counter(names::CAS_FORWARDS_SERVED, &[]),
            cas_forwards_refused: registry.counter(names::CAS_FORWARDS_REFUSED, &[]),
            cas_two_round: [
                names::OUTCOME_APPLIED,
                names::OUTCOME_CHECKED,
                names::OUTCOME_FALLBACK,
                names::OUTCOME_UNKNOWN,
            ]
            .map(|o| registry.counter(names::CAS_TWO_ROUND, &[(names::LABEL_OUTCOME, o)])),
            cas_check_refusals: ["promise", "unfinished", "commit", "data"]
                .map(|r| registry.counter(names::CAS_CHECK_REFUSALS, &[(names::LABEL_REASON, r)])),
        }
    }

    /// Counters of their own, in no registry (tests, simulations).
    pub fn detached() -> CoordinatorMetrics {
        CoordinatorMetrics::new(&Registry::new())
    }
}
