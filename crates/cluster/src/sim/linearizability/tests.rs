//! The checker's tests: histories it must accept and reject, its reports,
//! its bound, and property tests against the model and a brute-force search.

use super::*;

use proptest::prelude::*;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

fn operation(call: u64, ret: u64, op: Op, result: OpResult) -> Operation {
    Operation {
        key: 0,
        client: 0,
        call,
        ret,
        op,
        result,
    }
}

fn read(call: u64, ret: u64, value: Option<i64>) -> Operation {
    operation(call, ret, Op::Read, OpResult::Value(value))
}

fn write(call: u64, ret: u64, value: i64) -> Operation {
    operation(call, ret, Op::Write(value), OpResult::Written)
}

fn cas(call: u64, ret: u64, expected: Option<i64>, new: i64, applied: bool) -> Operation {
    let op = Op::Cas { expected, new };
    operation(call, ret, op, OpResult::Applied(applied))
}

/// An operation of unknown outcome, called at `call`.
fn unknown(call: u64, op: Op) -> Operation {
    operation(call, call, op, OpResult::Unknown)
}

fn on_key(key: u64, mut op: Operation) -> Operation {
    op.key = key;
    op
}

fn assert_linearizable(history: &[Operation]) {
    if let Err(violation) = check(history) {
        panic!("expected linearizable, got {violation}");
    }
}

fn assert_not_linearizable(history: &[Operation]) -> Violation {
    let violation = check(history).expect_err("expected a violation");
    assert_eq!(
        violation.kind,
        ViolationKind::NotLinearizable,
        "{violation}"
    );
    violation
}

// Linearizable histories.

#[test]
fn empty_history() {
    assert_linearizable(&[]);
}

#[test]
fn sequential_operations() {
    assert_linearizable(&[
        read(0, 1, None),
        write(2, 3, 1),
        read(4, 5, Some(1)),
        write(6, 7, 2),
        cas(8, 9, Some(2), 3, true),
        read(10, 11, Some(3)),
    ]);
}

#[test]
fn concurrent_writes_then_a_read_seeing_either() {
    for seen in [1, 2] {
        assert_linearizable(&[write(0, 10, 1), write(0, 10, 2), read(20, 30, Some(seen))]);
    }
}

#[test]
fn read_concurrent_with_a_write_sees_old_or_new() {
    for seen in [None, Some(1)] {
        assert_linearizable(&[write(0, 10, 1), read(5, 15, seen)]);
    }
}

#[test]
fn reads_order_concurrent_writes_the_same_way() {
    assert_linearizable(&[
        write(0, 10, 1),
        write(0, 10, 2),
        read(5, 20, Some(2)),
        read(5, 25, Some(1)),
        read(30, 40, Some(1)),
    ]);
}

#[test]
fn equal_return_and_call_times_are_concurrent() {
    assert_linearizable(&[write(0, 10, 1), read(10, 20, None)]);
}

#[test]
fn cas_chain() {
    assert_linearizable(&[
        write(0, 1, 0),
        cas(2, 10, Some(0), 1, true),
        cas(3, 11, Some(0), 5, false),
        cas(12, 20, Some(1), 2, true),
        cas(13, 21, Some(1), 6, false),
        read(30, 31, Some(2)),
    ]);
}

#[test]
fn concurrent_cas_order_is_found() {
    // Called in the order 3, 2, 1, but they can only apply as 1, 2, 3.
    assert_linearizable(&[
        cas(0, 100, Some(2), 3, true),
        cas(1, 100, Some(1), 2, true),
        cas(2, 100, None, 1, true),
        read(200, 201, Some(3)),
    ]);
}

#[test]
fn unknown_write_that_took_effect() {
    assert_linearizable(&[
        write(0, 1, 1),
        unknown(2, Op::Write(2)),
        read(100, 101, Some(2)),
    ]);
}

#[test]
fn unknown_write_that_did_not_take_effect() {
    assert_linearizable(&[
        write(0, 1, 1),
        unknown(2, Op::Write(2)),
        read(100, 101, Some(1)),
    ]);
}

#[test]
fn unknown_write_taking_effect_late() {
    assert_linearizable(&[
        unknown(0, Op::Write(2)),
        write(10, 11, 1),
        read(20, 21, Some(1)),
        read(30, 31, Some(2)),
    ]);
}

#[test]
fn unknown_cas_that_took_effect_or_not() {
    for seen in [Some(1), Some(2)] {
        assert_linearizable(&[
            write(0, 1, 1),
            unknown(
                2,
                Op::Cas {
                    expected: Some(1),
                    new: 2,
                },
            ),
            read(100, 101, seen),
        ]);
    }
}

#[test]
fn unknown_write_explains_a_cas_not_applied() {
    assert_linearizable(&[
        write(0, 1, 1),
        unknown(2, Op::Write(9)),
        cas(10, 20, Some(1), 2, false),
    ]);
}

#[test]
fn unknown_write_seen_only_through_a_cas_it_made_fail() {
    // Nothing reads 9: the write is placed only because the CAS of 9
    // would otherwise find its expected value.
    assert_linearizable(&[
        write(0, 1, 1),
        unknown(2, Op::Write(9)),
        read(3, 4, Some(1)),
        cas(10, 20, Some(1), 2, false),
        write(30, 31, 3),
        read(40, 41, Some(3)),
    ]);
}

#[test]
fn unknown_cas_chain_read_at_the_end() {
    assert_linearizable(&[
        write(0, 1, 1),
        unknown(
            2,
            Op::Cas {
                expected: Some(1),
                new: 2,
            },
        ),
        unknown(
            3,
            Op::Cas {
                expected: Some(2),
                new: 3,
            },
        ),
        read(10, 11, Some(1)),
        read(20, 21, Some(3)),
    ]);
}

#[test]
fn if_not_exists_has_one_winner() {
    for winner in 1..=3 {
        let mut history: Vec<Operation> =
            (1..=3).map(|v| cas(0, 10, None, v, v == winner)).collect();
        history.push(read(20, 30, Some(winner)));
        assert_linearizable(&history);
    }
}

#[test]
fn if_not_exists_after_an_unknown_winner() {
    assert_linearizable(&[
        unknown(
            0,
            Op::Cas {
                expected: None,
                new: 1,
            },
        ),
        cas(10, 20, None, 2, false),
        read(30, 40, Some(1)),
    ]);
}

#[test]
fn failed_operations_are_left_out() {
    assert_linearizable(&[
        operation(0, 1, Op::Write(7), OpResult::Failed),
        operation(2, 3, Op::Read, OpResult::Failed),
        read(4, 5, None),
    ]);
}

#[test]
fn keys_are_independent() {
    assert_linearizable(&[
        on_key(1, write(0, 10, 1)),
        on_key(2, write(0, 10, 2)),
        on_key(1, read(20, 30, Some(1))),
        on_key(2, read(20, 30, Some(2))),
    ]);
}

// Histories that are not linearizable.

#[test]
fn stale_read_after_a_completed_write() {
    let violation = assert_not_linearizable(&[write(0, 10, 1), read(20, 30, None)]);
    assert_eq!(violation.key, 0);
    assert!(violation.detail.contains("read = None"), "{violation}");
}

#[test]
fn two_cas_from_the_same_expected_value_both_applied() {
    assert_not_linearizable(&[
        write(0, 1, 0),
        cas(10, 20, Some(0), 1, true),
        cas(12, 22, Some(0), 2, true),
    ]);
}

#[test]
fn two_if_not_exists_winners() {
    assert_not_linearizable(&[cas(0, 10, None, 1, true), cas(0, 10, None, 2, true)]);
}

#[test]
fn read_of_a_value_never_written() {
    assert_not_linearizable(&[write(0, 10, 1), read(0, 20, Some(9))]);
}

#[test]
fn acknowledged_write_lost() {
    assert_not_linearizable(&[write(0, 10, 1), write(20, 30, 2), read(40, 50, Some(1))]);
}

#[test]
fn reads_going_back_to_an_older_value() {
    assert_not_linearizable(&[
        write(0, 10, 1),
        write(5, 15, 2),
        read(20, 30, Some(2)),
        read(40, 50, Some(1)),
    ]);
}

#[test]
fn cas_not_applied_although_the_register_held_the_expected_value() {
    assert_not_linearizable(&[
        write(0, 10, 1),
        cas(5, 30, Some(2), 3, false),
        cas(20, 30, Some(1), 2, false),
    ]);
    assert_not_linearizable(&[cas(0, 10, None, 1, false)]);
}

#[test]
fn unknown_write_cannot_take_effect_twice() {
    assert_not_linearizable(&[
        unknown(0, Op::Write(2)),
        write(10, 11, 1),
        read(20, 21, Some(2)),
        read(30, 31, Some(1)),
        read(40, 41, Some(2)),
    ]);
}

#[test]
fn unknown_write_cannot_take_effect_before_its_call() {
    assert_not_linearizable(&[read(0, 1, Some(2)), unknown(5, Op::Write(2))]);
}

#[test]
fn unknown_write_explains_only_one_cas_not_applied() {
    assert_not_linearizable(&[
        write(0, 1, 1),
        unknown(2, Op::Write(9)),
        cas(10, 20, Some(1), 2, false),
        write(30, 31, 1),
        cas(40, 50, Some(1), 3, false),
    ]);
}

#[test]
fn unknown_cas_chain_cannot_skip_a_step() {
    assert_not_linearizable(&[
        write(0, 1, 1),
        unknown(
            3,
            Op::Cas {
                expected: Some(2),
                new: 3,
            },
        ),
        read(20, 21, Some(3)),
    ]);
}

#[test]
fn failed_write_is_never_seen() {
    assert_not_linearizable(&[
        operation(0, 1, Op::Write(7), OpResult::Failed),
        read(4, 5, Some(7)),
    ]);
}

#[test]
fn violation_names_the_failing_key() {
    let violation = assert_not_linearizable(&[
        on_key(1, write(0, 10, 1)),
        on_key(2, write(0, 10, 2)),
        on_key(1, read(20, 30, Some(1))),
        on_key(2, read(20, 30, Some(1))),
    ]);
    assert_eq!(violation.key, 2);
}

#[test]
fn violation_shows_the_longest_prefix_and_the_stuck_operations() {
    let violation = assert_not_linearizable(&[
        write(0, 1, 1),
        write(2, 3, 2),
        read(4, 5, Some(2)),
        read(6, 7, Some(1)),
    ]);
    let text = violation.to_string();
    assert!(
        text.starts_with(
            "key 0: not linearizable: the longest linearizable prefix found holds 3 of 4"
        ),
        "{text}"
    );
    assert!(text.contains("register at Some(2)"), "{text}");
    assert!(
        text.contains("#3 (client 0, 6..7): read = Some(1)"),
        "{text}"
    );
}

// Malformed histories and the bound.

#[test]
fn return_before_call_is_malformed() {
    let violation = check(&[read(10, 5, None)]).unwrap_err();
    assert_eq!(violation.kind, ViolationKind::Malformed);
}

#[test]
fn result_not_fitting_the_operation_is_malformed() {
    let violation = check(&[operation(0, 1, Op::Read, OpResult::Applied(true))]).unwrap_err();
    assert_eq!(violation.kind, ViolationKind::Malformed);
}

#[test]
fn exceeding_the_bound_is_inconclusive() {
    let history: Vec<Operation> = (0..20).map(|v| write(0, 100, v)).collect();
    let violation = check_bounded(&history, 10).unwrap_err();
    assert_eq!(violation.kind, ViolationKind::Inconclusive, "{violation}");
    assert_linearizable(&history);
}

// Generated histories.

/// What a generated operation turns out as.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Fate {
    Known,
    /// Unknown to the client, and it took effect.
    UnknownApplied,
    /// Unknown to the client, and it never took effect.
    UnknownLost,
    Failed,
}

fn op_strategy() -> impl Strategy<Value = Op> {
    prop_oneof![
        Just(Op::Read),
        (0..4i64).prop_map(Op::Write),
        (proptest::option::of(0..4i64), 0..4i64)
            .prop_map(|(expected, new)| Op::Cas { expected, new }),
    ]
}

fn fate_strategy() -> impl Strategy<Value = Fate> {
    prop_oneof![
        8 => Just(Fate::Known),
        1 => Just(Fate::UnknownApplied),
        1 => Just(Fate::UnknownLost),
        1 => Just(Fate::Failed),
    ]
}

/// Runs `op` on `key`'s register (if it takes effect) and returns
/// what the client saw.
fn execute(registers: &mut BTreeMap<u64, Option<i64>>, key: u64, op: Op, fate: Fate) -> OpResult {
    let register = registers.entry(key).or_default();
    let before = *register;
    if matches!(fate, Fate::Known | Fate::UnknownApplied) {
        let probe = operation(0, 0, op, OpResult::Unknown);
        *register = step(before, &probe).expect("an unknown result fits anything");
    }
    match fate {
        Fate::Known => match op {
            Op::Read => OpResult::Value(before),
            Op::Write(_) => OpResult::Written,
            Op::Cas { expected, .. } => OpResult::Applied(before == expected),
        },
        Fate::UnknownApplied | Fate::UnknownLost => OpResult::Unknown,
        Fate::Failed => OpResult::Failed,
    }
}

/// One generated operation: key, client, what it does, its fate, and
/// how far its call and return are moved apart when stretched.
type Planned = (u64, u64, Op, Fate, u64, u64);

fn planned_strategy(fates: BoxedStrategy<Fate>) -> impl Strategy<Value = Vec<Planned>> {
    proptest::collection::vec(
        (0..3u64, 0..4u64, op_strategy(), fates, 0..60u64, 0..60u64),
        0..60,
    )
}

/// Executes the planned operations one after the other; unstretched,
/// each returns before the next is called.
fn sequential_history(planned: &[Planned], stretched: bool) -> Vec<Operation> {
    let mut registers = BTreeMap::new();
    let mut history = Vec::new();
    for (n, &(key, client, op, fate, before, after)) in planned.iter().enumerate() {
        let result = execute(&mut registers, key, op, fate);
        let (before, after) = if stretched { (before, after) } else { (0, 0) };
        let start = 1_000 + 10 * n as u64;
        history.push(Operation {
            key,
            client,
            call: start - before,
            ret: start + 5 + after,
            op,
            result,
        });
    }
    history
}

/// A value other than `value` among those the generated operations use.
fn other_value(value: Option<i64>, pick: usize) -> Option<i64> {
    let choices: Vec<Option<i64>> = [None, Some(0), Some(1), Some(2), Some(3)]
        .into_iter()
        .filter(|v| *v != value)
        .collect();
    choices[pick % choices.len()]
}

proptest! {
    #[test]
    fn sequential_histories_are_linearizable(
        planned in planned_strategy(fate_strategy().boxed()),
        stretched in any::<bool>(),
    ) {
        let history = sequential_history(&planned, stretched);
        let outcome = check(&history);
        prop_assert!(outcome.is_ok(), "{}", outcome.unwrap_err());
    }

    #[test]
    fn a_changed_result_in_a_sequential_history_is_rejected(
        planned in planned_strategy(Just(Fate::Known).boxed()),
        which in any::<proptest::sample::Index>(),
        pick in 0..4usize,
    ) {
        let mut history = sequential_history(&planned, false);
        let judged: Vec<usize> = (0..history.len())
            .filter(|&i| !matches!(history[i].op, Op::Write(_)))
            .collect();
        prop_assume!(!judged.is_empty());
        let changed = &mut history[judged[which.index(judged.len())]];
        changed.result = match changed.result {
            OpResult::Value(value) => OpResult::Value(other_value(value, pick)),
            OpResult::Applied(applied) => OpResult::Applied(!applied),
            other => unreachable!("{other:?}"),
        };
        let violation = check(&history);
        prop_assert!(violation.is_err(), "accepted: {:?}", history);
        prop_assert_eq!(violation.unwrap_err().kind, ViolationKind::NotLinearizable);
    }
}

/// A concurrent history of one key: `clients` clients issue `ops`
/// operations in all, each taking effect at a random point of its
/// interval (a few of unknown outcome, some of which take effect).
fn concurrent_history(seed: u64, clients: u64, ops: usize) -> Vec<Operation> {
    let mut rng = StdRng::seed_from_u64(seed);
    let mut free_at = vec![0u64; clients as usize];
    // (linearization point, the operation without its result, fate)
    let mut planned = Vec::new();
    for n in 0..ops {
        let client = rng.gen_range(0..clients);
        let call = free_at[client as usize] + rng.gen_range(0..20);
        let point = call + rng.gen_range(0..30);
        let ret = point + rng.gen_range(0..30);
        free_at[client as usize] = ret + 1;
        let op = match rng.gen_range(0..3) {
            0 => Op::Read,
            1 => Op::Write(n as i64),
            _ => Op::Cas {
                expected: rng.gen_bool(0.8).then(|| rng.gen_range(0..n.max(1) as i64)),
                new: n as i64,
            },
        };
        let fate = match rng.gen_range(0..40) {
            0 => Fate::UnknownApplied,
            1 => Fate::UnknownLost,
            2 => Fate::Failed,
            _ => Fate::Known,
        };
        let op = Operation {
            key: 0,
            client,
            call,
            ret,
            op,
            result: OpResult::Unknown,
        };
        planned.push((point, op, fate));
    }
    planned.sort_by_key(|(point, op, _)| (*point, op.client));
    let mut registers = BTreeMap::new();
    let mut history: Vec<Operation> = planned
        .into_iter()
        .map(|(_, mut op, fate)| {
            op.result = execute(&mut registers, 0, op.op, fate);
            op
        })
        .collect();
    history.sort_by_key(|op| op.call);
    history
}

#[test]
fn concurrent_histories_are_linearizable() {
    for seed in 0..20 {
        let history = concurrent_history(seed, 4, 100);
        if let Err(violation) = check(&history) {
            panic!("seed {seed}: {violation}");
        }
    }
}

/// The states the search explores for a one-key history, or its
/// violation.
fn explored(history: &[Operation]) -> Result<usize, Violation> {
    let keys = by_key(history)?;
    keys.get(&0)
        .map_or(Ok(0), |entries| check_key(0, entries, MAX_STATES_PER_KEY))
}

#[test]
fn five_hundred_concurrent_operations_check_quickly() {
    for clients in [3, 5, 8] {
        let history = concurrent_history(7, clients, 500);
        let explored = explored(&history).unwrap();
        assert!(
            explored < 5 * history.len(),
            "{clients} clients: {explored} states"
        );
    }
}

#[test]
fn five_hundred_concurrent_operations_with_a_bad_read_fail_quickly() {
    for clients in [3, 5, 8] {
        let mut history = concurrent_history(7, clients, 500);
        let late_read = history
            .iter()
            .rposition(|op| matches!(op.result, OpResult::Value(Some(_))))
            .expect("a read");
        history[late_read].result = OpResult::Value(Some(-1));
        let violation = explored(&history).unwrap_err();
        assert_eq!(
            violation.kind,
            ViolationKind::NotLinearizable,
            "{violation}"
        );
        assert!(
            violation.detail.contains(&format!("#{late_read} ")),
            "{violation}"
        );
    }
}

/// Whether some order of the operations (one key) explains them,
/// tried exhaustively: the reference the checker is held to.
fn brute_force(history: &[Operation]) -> bool {
    let ops: Vec<&Operation> = history
        .iter()
        .filter(|op| op.result != OpResult::Failed)
        .collect();
    brute_force_from(&ops, &mut vec![false; ops.len()], None)
}

fn brute_force_from(ops: &[&Operation], placed: &mut [bool], register: Option<i64>) -> bool {
    let known_left = |placed: &[bool], j: usize| !placed[j] && ops[j].result != OpResult::Unknown;
    if !(0..ops.len()).any(|j| known_left(placed, j)) {
        return true;
    }
    for i in 0..ops.len() {
        let must_wait = (0..ops.len()).any(|j| known_left(placed, j) && ops[j].ret < ops[i].call);
        if placed[i] || must_wait {
            continue;
        }
        let Some(next) = step(register, ops[i]) else {
            continue;
        };
        placed[i] = true;
        let found = brute_force_from(ops, placed, next);
        placed[i] = false;
        if found {
            return true;
        }
    }
    false
}

/// A small history of one key with results drawn at random: some
/// linearizable, most not.
fn random_history() -> impl Strategy<Value = Vec<Operation>> {
    let operation = (
        0..20u64,
        0..15u64,
        op_strategy(),
        fate_strategy(),
        any::<bool>(),
        proptest::option::of(0..4i64),
    )
        .prop_map(|(call, length, op, fate, applied, value)| {
            let result = match (fate, op) {
                (Fate::UnknownApplied | Fate::UnknownLost, _) => OpResult::Unknown,
                (Fate::Failed, _) => OpResult::Failed,
                (Fate::Known, Op::Read) => OpResult::Value(value),
                (Fate::Known, Op::Write(_)) => OpResult::Written,
                (Fate::Known, Op::Cas { .. }) => OpResult::Applied(applied),
            };
            Operation {
                key: 0,
                client: 0,
                call,
                ret: call + length,
                op,
                result,
            }
        });
    proptest::collection::vec(operation, 0..8)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn verdict_agrees_with_brute_force(history in random_history()) {
        let expected = brute_force(&history);
        let verdict = check(&history);
        prop_assert_eq!(verdict.is_ok(), expected, "{:?}: {:?}", history, verdict);
    }
}
