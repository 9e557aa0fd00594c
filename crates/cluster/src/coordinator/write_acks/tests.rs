//! Each level's counting, from the rules in the module doc, and a property
//! test against a direct statement of the rule on random replica sets.

use super::*;
use proptest::prelude::*;

const DC1: &str = "dc1";
const DC2: &str = "dc2";

fn nts<'a>(dcs: &[(&'a str, u32)]) -> Factors<'a> {
    Factors::PerDc(dcs.to_vec())
}

#[test]
fn quorum_of_three_succeeds_on_the_second_ack() {
    let mut w = WriteAcks::new(Consistency::Quorum, &Factors::Simple(3), DC1, &[DC1; 3]);
    assert_eq!(w.block_for(), 2);
    assert_eq!(w.ack(0), Progress::Waiting);
    assert_eq!(
        w.ack(0),
        Progress::Waiting,
        "a second answer of one replica"
    );
    assert_eq!(w.received(), 1);
    assert_eq!(w.ack(2), Progress::Succeeded);
    assert_eq!(w.fail(1), Progress::Succeeded, "answers after the outcome");
    assert_eq!(w.received(), 2);
}

#[test]
fn a_pending_replica_needs_one_more_ack() {
    let mut w =
        WriteAcks::new(Consistency::Quorum, &Factors::Simple(3), DC1, &[DC1; 4]).with_pending(3);
    assert_eq!(w.block_for(), 3);
    assert_eq!(w.ack(0), Progress::Waiting);
    assert_eq!(
        w.ack(1),
        Progress::Waiting,
        "a quorum of natural replicas is not enough"
    );
    assert_eq!(w.ack(3), Progress::Succeeded);
    // Two failures among four leave fewer than three to answer.
    let mut f =
        WriteAcks::new(Consistency::Quorum, &Factors::Simple(3), DC1, &[DC1; 4]).with_pending(3);
    assert_eq!(f.fail(3), Progress::Waiting);
    assert_eq!(f.fail(0), Progress::Failed);
    // LOCAL_QUORUM ignores a pending replica of another data centre.
    let factors = nts(&[(DC1, 3), (DC2, 3)]);
    let local = WriteAcks::new(
        Consistency::LocalQuorum,
        &factors,
        DC1,
        &[DC1, DC1, DC1, DC2],
    )
    .with_pending(3);
    assert_eq!(local.block_for(), 2);
    // EACH_QUORUM: the pending replica's data centre needs three.
    let mut each = WriteAcks::new(
        Consistency::EachQuorum,
        &factors,
        DC1,
        &[DC1, DC1, DC1, DC2, DC2, DC2, DC2],
    )
    .with_pending(6);
    for i in [0, 1, 3, 4] {
        assert_eq!(each.ack(i), Progress::Waiting);
    }
    assert_eq!(each.ack(6), Progress::Succeeded);
}

#[test]
fn quorum_of_three_fails_on_the_second_failure() {
    let mut w = WriteAcks::new(Consistency::Quorum, &Factors::Simple(3), DC1, &[DC1; 3]);
    assert_eq!(w.fail(0), Progress::Waiting);
    assert_eq!(w.fail(1), Progress::Failed);
    assert_eq!(w.ack(2), Progress::Failed);
}

#[test]
fn all_fails_on_the_first_failure_and_one_survives_two() {
    let mut all = WriteAcks::new(Consistency::All, &Factors::Simple(3), DC1, &[DC1; 3]);
    assert_eq!(all.fail(1), Progress::Failed);
    let mut one = WriteAcks::new(Consistency::One, &Factors::Simple(3), DC1, &[DC1; 3]);
    assert_eq!(one.fail(0), Progress::Waiting);
    assert_eq!(one.fail(1), Progress::Waiting);
    assert_eq!(one.ack(2), Progress::Succeeded);
}

#[test]
fn local_quorum_counts_only_the_local_data_centre() {
    let factors = nts(&[(DC1, 3), (DC2, 3)]);
    let replicas = [DC1, DC2, DC1, DC2, DC1, DC2];
    let mut w = WriteAcks::new(Consistency::LocalQuorum, &factors, DC1, &replicas);
    assert_eq!(w.block_for(), 2);
    assert_eq!(w.ack(1), Progress::Waiting, "remote ack");
    assert_eq!(w.ack(3), Progress::Waiting, "remote ack");
    assert_eq!(w.received(), 0);
    assert_eq!(
        w.fail(5),
        Progress::Waiting,
        "a remote failure does not count"
    );
    assert_eq!(w.failures(), 0);
    assert_eq!(w.ack(0), Progress::Waiting);
    assert_eq!(w.ack(4), Progress::Succeeded);
}

#[test]
fn local_one_fails_when_every_local_replica_failed() {
    let factors = nts(&[(DC1, 2), (DC2, 2)]);
    let replicas = [DC1, DC2, DC1, DC2];
    let mut w = WriteAcks::new(Consistency::LocalOne, &factors, DC1, &replicas);
    assert_eq!(w.fail(0), Progress::Waiting);
    assert_eq!(w.ack(1), Progress::Waiting);
    assert_eq!(w.fail(2), Progress::Failed);
}

#[test]
fn each_quorum_needs_a_quorum_in_every_data_centre() {
    let factors = nts(&[(DC1, 3), (DC2, 3)]);
    let replicas = [DC1, DC1, DC1, DC2, DC2, DC2];
    let mut w = WriteAcks::new(Consistency::EachQuorum, &factors, DC1, &replicas);
    assert_eq!(w.block_for(), 4);
    for i in 0..3 {
        assert_eq!(w.ack(i), Progress::Waiting, "dc1 alone is not enough");
    }
    assert_eq!(w.received(), 3);
    assert_eq!(w.ack(3), Progress::Waiting);
    assert_eq!(w.ack(5), Progress::Succeeded);
}

#[test]
fn each_quorum_over_simple_strategy_is_quorum() {
    let mut w = WriteAcks::new(Consistency::EachQuorum, &Factors::Simple(3), DC1, &[DC1; 3]);
    assert_eq!(w.ack(0), Progress::Waiting);
    assert_eq!(w.ack(1), Progress::Succeeded);
}

#[test]
fn a_hint_acknowledges_only_at_any() {
    let mut any = WriteAcks::new(Consistency::Any, &Factors::Simple(3), DC1, &[DC1; 3]);
    assert_eq!(any.hint_stored(), Progress::Succeeded);
    assert_eq!(any.received(), 1);
    let mut one = WriteAcks::new(Consistency::One, &Factors::Simple(3), DC1, &[DC1; 3]);
    assert_eq!(one.hint_stored(), Progress::Waiting);
    assert_eq!(one.received(), 0);
}

#[test]
fn an_unknown_replica_index_changes_nothing() {
    let mut w = WriteAcks::new(Consistency::One, &Factors::Simple(1), DC1, &[DC1]);
    assert_eq!(w.ack(7), Progress::Waiting);
    assert_eq!(w.fail(7), Progress::Waiting);
    assert_eq!(w.ack(0), Progress::Succeeded);
}

/// A random write: a level, two data centres' factors, the coordinator's
/// data centre, and an order of answers (replica index, ack or failure).
fn write_case() -> impl Strategy<Value = (Consistency, u32, u32, bool, Vec<(usize, bool)>)> {
    let levels = prop::sample::select(vec![
        Consistency::One,
        Consistency::Two,
        Consistency::Three,
        Consistency::Quorum,
        Consistency::All,
        Consistency::LocalOne,
        Consistency::LocalQuorum,
        Consistency::EachQuorum,
    ]);
    (levels, 1u32..=4, 0u32..=3, any::<bool>()).prop_flat_map(|(cl, rf1, rf2, local1)| {
        let n = (rf1 + rf2) as usize;
        let answers = prop::collection::vec((0..n + 1, any::<bool>()), 0..2 * n + 2);
        (Just(cl), Just(rf1), Just(rf2), Just(local1), answers)
    })
}

proptest! {
    /// Whatever the order of answers, the outcome is the first moment the
    /// rule says so: success at the ack that gives each scope that counts
    /// its acks, failure at the failure that makes `block_for + failures`
    /// pass the replicas that count, and nothing after the first outcome
    /// changes it.
    #[test]
    fn the_outcome_follows_the_counting_rule((cl, rf1, rf2, local1, answers) in write_case()) {
        let factors = nts(&[(DC1, rf1), (DC2, rf2)]);
        let local = if local1 { DC1 } else { DC2 };
        let replicas: Vec<&str> = (0..rf1).map(|_| DC1).chain((0..rf2).map(|_| DC2)).collect();
        let mut w = WriteAcks::new(cl, &factors, local, &replicas);
        let counts = |i: usize| !cl.is_datacenter_local() || replicas[i] == local;
        let candidates = (0..replicas.len()).filter(|i| counts(*i)).count() as u32;
        let block_for = cl.block_for(&factors, local);
        let (mut seen, mut acks, mut fails) = (Vec::new(), [0u32; 2], 0u32);
        let mut expected = Progress::Waiting;
        for (i, ok) in answers {
            let got = if ok { w.ack(i) } else { w.fail(i) };
            if expected == Progress::Waiting && i < replicas.len() && !seen.contains(&i) {
                seen.push(i);
                if counts(i) {
                    let dc = usize::from(replicas[i] == DC2);
                    if ok {
                        acks[dc] += 1;
                    } else {
                        fails += 1;
                    }
                }
                let met = match cl {
                    Consistency::EachQuorum => {
                        acks[0] >= quorum(rf1) && acks[1] >= quorum(rf2)
                    }
                    _ => acks[0] + acks[1] >= block_for,
                };
                // Each rule is checked when its kind of answer comes.
                if ok && met {
                    expected = Progress::Succeeded;
                } else if !ok && counts(i) && block_for + fails > candidates {
                    expected = Progress::Failed;
                }
            }
            prop_assert_eq!(got, expected);
        }
    }
}
