//! A linearizability checker for register histories: the judge of the
//! lightweight transactions (Paxos) the simulation runs. Each key is one
//! register holding `Option<i64>` (`None`: absent), read, written and
//! compared-and-set by clients whose operations overlap in time; the
//! history is linearizable when every operation can be given one point
//! between its call and its return such that, taken in the order of
//! those points, the operations return what a single register would.
//!
//! The search is Wing and Gong's, with Lowe's memoisation (as in
//! porcupine and Knossos): keys are checked one at a time (a history is
//! linearizable exactly when each key's is); within a key the operations
//! are ordered by call time and the search repeatedly places an
//! operation that may come next (one called before every other operation
//! not yet placed has returned), applies it to the register, and goes on,
//! undoing its last choice when stuck. A state (operations placed,
//! register value) already explored is never explored again: the rest of
//! the search from it depends on nothing else. The search is bounded
//! ([`MAX_STATES_PER_KEY`]); running out of states is a failure
//! ([`ViolationKind::Inconclusive`]), never a pass.
//!
//! An operation whose outcome the client does not know (a timeout, an
//! error that may have come after the change) may have taken effect at
//! any one point after its call, or never: it is treated as returning at
//! infinity with any result. An operation that definitely had no effect
//! is left out. Two operations are concurrent unless one returned
//! strictly before the other was called.
//!
//! Operations of unknown outcome stay candidates to the end, so a naive
//! search places them at every point, in every combination; a history
//! with a few dozen timeouts would never be decided once it fails. Two
//! rules keep the search small without changing its verdict: a state is
//! skipped when one already explored *dominates* it (see [`Memo`]), and
//! an unknown operation is placed only where something could see its
//! effect (see [`Search::may_matter`]).

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

/// The most states (placements of one operation) the search explores
/// for one key before giving up as inconclusive. A linearizable history
/// takes a few per operation, one that is not some tens per operation;
/// a debug build explores this many in several seconds.
pub const MAX_STATES_PER_KEY: usize = 200_000;

/// How many operations a violation lists at most in each of its lists.
const LISTED_MAX: usize = 8;

/// One client operation on one key's register, as observed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Operation {
    /// The register.
    pub key: u64,
    /// Who issued it (for the report only: the checker orders operations
    /// by time alone).
    pub client: u64,
    /// When it was invoked.
    pub call: u64,
    /// When its outcome came back; ignored when the outcome is
    /// [`OpResult::Unknown`] or [`OpResult::Failed`].
    pub ret: u64,
    pub op: Op,
    pub result: OpResult,
}

/// What an operation asks of the register.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    /// Return the value.
    Read,
    /// Set the value.
    Write(i64),
    /// Set the value to `new` if it is `expected` (`None`: IF NOT
    /// EXISTS), and say whether it was.
    Cas { expected: Option<i64>, new: i64 },
}

/// What an operation returned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OpResult {
    /// A [`Op::Read`]'s value.
    Value(Option<i64>),
    /// A [`Op::Write`] was acknowledged.
    Written,
    /// Whether a [`Op::Cas`] applied.
    Applied(bool),
    /// Unknown: it may have taken effect at any one point after its
    /// call, or never.
    Unknown,
    /// It definitely had no effect (it is left out).
    Failed,
}

/// Why a history failed the check.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Violation {
    /// The register whose operations failed.
    pub key: u64,
    pub kind: ViolationKind,
    /// What was found, to debug a failing seed.
    pub detail: String,
}

/// The kinds of failure.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ViolationKind {
    /// No order of the key's operations explains what they returned.
    NotLinearizable,
    /// The search explored its bound of states without deciding.
    Inconclusive,
    /// An operation cannot be judged: it returned before its call, or a
    /// result that does not fit its kind.
    Malformed,
}

impl fmt::Display for Violation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let kind = match self.kind {
            ViolationKind::NotLinearizable => "not linearizable",
            ViolationKind::Inconclusive => "inconclusive",
            ViolationKind::Malformed => "malformed",
        };
        write!(f, "key {}: {kind}: {}", self.key, self.detail)
    }
}

impl std::error::Error for Violation {}

impl fmt::Display for Op {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Op::Read => write!(f, "read"),
            Op::Write(value) => write!(f, "write {value}"),
            Op::Cas { expected, new } => write!(f, "cas {expected:?} -> {new}"),
        }
    }
}

impl fmt::Display for OpResult {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            OpResult::Value(value) => write!(f, "{value:?}"),
            OpResult::Written => write!(f, "ok"),
            OpResult::Applied(true) => write!(f, "applied"),
            OpResult::Applied(false) => write!(f, "not applied"),
            OpResult::Unknown => write!(f, "unknown"),
            OpResult::Failed => write!(f, "failed"),
        }
    }
}

/// Checks a history with the default bound, [`MAX_STATES_PER_KEY`].
pub fn check(history: &[Operation]) -> Result<(), Violation> {
    check_bounded(history, MAX_STATES_PER_KEY)
}

/// Checks a history, exploring at most `max_states` states per key; the
/// first key (in key order) that fails is reported.
pub fn check_bounded(history: &[Operation], max_states: usize) -> Result<(), Violation> {
    for (key, ops) in by_key(history)? {
        check_key(key, &ops, max_states)?;
    }
    Ok(())
}

/// One operation of a key, as the search sees it.
#[derive(Debug, Clone, Copy)]
struct Entry<'a> {
    /// Its position in the history (for the report).
    index: usize,
    /// Its return time, `u64::MAX` when unknown.
    ret: u64,
    /// Its number among the key's operations of known outcome, or among
    /// those of unknown outcome, in call order.
    slot: usize,
    op: &'a Operation,
}

impl Entry<'_> {
    fn known(&self) -> bool {
        self.op.result != OpResult::Unknown
    }
}

impl fmt::Display for Entry<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let op = self.op;
        write!(f, "#{} (client {}, {}..", self.index, op.client, op.call)?;
        if self.known() {
            write!(f, "{}", self.ret)?;
        } else {
            write!(f, "?")?;
        }
        write!(f, "): {} = {}", op.op, op.result)
    }
}

/// The history's operations grouped by key, each key's ordered by call
/// time, without those that definitely had no effect or constrain
/// nothing (a read of unknown outcome).
fn by_key(history: &[Operation]) -> Result<BTreeMap<u64, Vec<Entry<'_>>>, Violation> {
    let mut keys: BTreeMap<u64, Vec<Entry<'_>>> = BTreeMap::new();
    for (index, op) in history.iter().enumerate() {
        let entry = entry(index, op)?;
        if let Some(entry) = entry {
            keys.entry(op.key).or_default().push(entry);
        }
    }
    for entries in keys.values_mut() {
        entries.sort_by_key(|entry| (entry.op.call, entry.ret, entry.index));
        number_slots(entries);
    }
    Ok(keys)
}

/// Numbers the operations of known outcome, and those of unknown
/// outcome, each from 0 in order.
fn number_slots(entries: &mut [Entry<'_>]) {
    let (mut known, mut unknown) = (0, 0);
    for entry in entries {
        let next = if entry.known() {
            &mut known
        } else {
            &mut unknown
        };
        entry.slot = *next;
        *next += 1;
    }
}

/// What the search takes of one operation, or why it cannot.
fn entry(index: usize, op: &Operation) -> Result<Option<Entry<'_>>, Violation> {
    let malformed = |why: &str| Violation {
        key: op.key,
        kind: ViolationKind::Malformed,
        detail: format!("operation #{index} ({} = {}): {why}", op.op, op.result),
    };
    let fits = matches!(
        (op.op, op.result),
        (_, OpResult::Unknown | OpResult::Failed)
            | (Op::Read, OpResult::Value(_))
            | (Op::Write(_), OpResult::Written)
            | (Op::Cas { .. }, OpResult::Applied(_))
    );
    if !fits {
        return Err(malformed("the result does not fit the operation"));
    }
    match op.result {
        OpResult::Failed => Ok(None),
        OpResult::Unknown if op.op == Op::Read => Ok(None),
        OpResult::Unknown => Ok(Some(Entry {
            index,
            ret: u64::MAX,
            slot: 0,
            op,
        })),
        _ if op.ret < op.call => Err(malformed("it returned before its call")),
        _ => Ok(Some(Entry {
            index,
            ret: op.ret,
            slot: 0,
            op,
        })),
    }
}

/// The register after `op` at a point where it held `register`, or
/// `None` if the operation cannot have returned what it did there.
fn step(register: Option<i64>, op: &Operation) -> Option<Option<i64>> {
    match (op.op, op.result) {
        (Op::Read, OpResult::Value(value)) => (value == register).then_some(register),
        (Op::Read, _) => Some(register),
        (Op::Write(value), _) => Some(Some(value)),
        (Op::Cas { expected, new }, result) => {
            let holds = register == expected;
            let after = if holds { Some(new) } else { register };
            match result {
                OpResult::Applied(applied) => (applied == holds).then_some(after),
                _ => Some(after),
            }
        }
    }
}

/// Checks one key's operations (ordered by call time); returns how many
/// states the search explored.
fn check_key(key: u64, entries: &[Entry<'_>], max_states: usize) -> Result<usize, Violation> {
    let mut search = Search::new(entries);
    match search.run(max_states) {
        Outcome::Linearizable => Ok(search.explored),
        Outcome::NotLinearizable => Err(Violation {
            key,
            kind: ViolationKind::NotLinearizable,
            detail: explain(entries, &search.longest),
        }),
        Outcome::Inconclusive => Err(Violation {
            key,
            kind: ViolationKind::Inconclusive,
            detail: format!(
                "{} operations, {} states explored without a decision; longest \
                 linearizable prefix found: {} operations",
                entries.len(),
                search.explored,
                search.longest.len()
            ),
        }),
    }
}

/// How a search ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Outcome {
    Linearizable,
    NotLinearizable,
    Inconclusive,
}

/// A set of operations (by slot), as bits.
#[derive(Debug, Clone)]
struct Bitset(Vec<u64>);

impl Bitset {
    fn new(len: usize) -> Self {
        Bitset(vec![0; len.div_ceil(64)])
    }

    fn insert(&mut self, i: usize) {
        self.0[i / 64] |= 1 << (i % 64);
    }

    fn remove(&mut self, i: usize) {
        self.0[i / 64] &= !(1 << (i % 64));
    }

    /// The words of the set with `extra` added, without the trailing
    /// empty ones (so that equal sets have equal words).
    fn words_with(&self, extra: Option<usize>) -> Vec<u64> {
        let mut words = self.0.clone();
        if let Some(i) = extra {
            words[i / 64] |= 1 << (i % 64);
        }
        while words.last() == Some(&0) {
            words.pop();
        }
        words
    }
}

/// Whether every bit of `a` is in `b` (both without trailing empty
/// words).
fn is_subset(a: &[u64], b: &[u64]) -> bool {
    a.len() <= b.len() && a.iter().zip(b).all(|(a, b)| a & !b == 0)
}

/// A set of operations of known outcome in a compact form: the number of
/// leading words all set, then the other words (those placed are mostly
/// a prefix of the call order, so this stays a word or two long).
type KnownKey = (usize, Vec<u64>);

fn known_key(mut words: Vec<u64>) -> KnownKey {
    let full = words.iter().take_while(|word| **word == u64::MAX).count();
    words.drain(..full);
    (full, words)
}

/// The states the search reached: a state is the operations placed and
/// the register after them.
///
/// Placing an operation of unknown outcome only takes options away: left
/// pending, it could still be placed at the same point, later, or never
/// (it returns at infinity, so it never limits what may come next). So a
/// state is *dominated* by one reached before with the same operations
/// of known outcome placed, the same register, and a subset of the
/// unknown ones placed; the search skips it. (Lowe's memo is the case of
/// equal sets.)
#[derive(Default)]
struct Memo {
    /// For each (known operations placed, register), the sets of unknown
    /// operations placed with them, none a subset of another.
    states: BTreeMap<KnownKey, BTreeMap<Option<i64>, Vec<Vec<u64>>>>,
}

impl Memo {
    /// Whether a state recorded before dominates this one.
    fn dominated(&self, known: &KnownKey, unknown: &[u64], register: Option<i64>) -> bool {
        self.states
            .get(known)
            .and_then(|by_register| by_register.get(&register))
            .is_some_and(|sets| sets.iter().any(|set| is_subset(set, unknown)))
    }

    /// Records a state not dominated, in place of those it dominates.
    fn record(&mut self, known: KnownKey, unknown: Vec<u64>, register: Option<i64>) {
        let sets = self
            .states
            .entry(known)
            .or_default()
            .entry(register)
            .or_default();
        sets.retain(|set| !is_subset(&unknown, set));
        sets.push(unknown);
    }
}

/// The search over one key's operations.
struct Search<'e, 'a> {
    /// The operations, in call order.
    entries: &'e [Entry<'a>],
    /// The operations of known outcome placed so far, by slot.
    placed_known: Bitset,
    /// The operations of unknown outcome placed so far, by slot.
    placed_unknown: Bitset,
    /// The operations of known outcome not placed, by position.
    pending_known: BTreeSet<usize>,
    /// The operations of unknown outcome not placed, by position.
    pending_unknown: BTreeSet<usize>,
    /// The operations not placed, by return time.
    by_ret: BTreeSet<(u64, usize)>,
    /// The operations not placed that read or set the register for sure
    /// ([`is_decider`]), by return time.
    deciders_by_ret: BTreeSet<(u64, usize)>,
    /// For each value, the operations that touch it ([`touched`]), in
    /// call order.
    touching: BTreeMap<Option<i64>, Vec<usize>>,
    /// For each value, the CAS that expected it and did not apply, in
    /// call order.
    refusing: BTreeMap<Option<i64>, Vec<usize>>,
    /// How many of the pending operations have a known outcome.
    known_pending: usize,
    /// The register's value after the operations placed.
    register: Option<i64>,
    /// The operations placed, in order, each with the register before it.
    path: Vec<(usize, Option<i64>)>,
    memo: Memo,
    /// The longest path found (positions, in order).
    longest: Vec<usize>,
    /// How many states were reached.
    explored: usize,
}

impl<'e, 'a> Search<'e, 'a> {
    fn new(entries: &'e [Entry<'a>]) -> Self {
        let known = entries.iter().filter(|e| e.known()).count();
        Search {
            entries,
            placed_known: Bitset::new(known),
            placed_unknown: Bitset::new(entries.len() - known),
            pending_known: (0..entries.len()).filter(|&i| entries[i].known()).collect(),
            pending_unknown: (0..entries.len())
                .filter(|&i| !entries[i].known())
                .collect(),
            by_ret: entries
                .iter()
                .enumerate()
                .map(|(i, e)| (e.ret, i))
                .collect(),
            deciders_by_ret: entries
                .iter()
                .enumerate()
                .filter(|(_, e)| is_decider(e))
                .map(|(i, e)| (e.ret, i))
                .collect(),
            touching: index_by_value(entries, touched),
            refusing: index_by_value(entries, |entry| match (entry.op.op, entry.op.result) {
                (Op::Cas { expected, .. }, OpResult::Applied(false)) => vec![expected],
                _ => Vec::new(),
            }),
            known_pending: known,
            register: None,
            path: Vec::new(),
            memo: Memo::default(),
            longest: Vec::new(),
            explored: 0,
        }
    }

    /// Searches depth first: place the next operation that may come next
    /// and leads to a new state, or else undo the last placement and try
    /// the operations after it.
    fn run(&mut self, max_states: usize) -> Outcome {
        let mut after = None;
        loop {
            // What remains are operations of unknown outcome: each may
            // never have taken effect.
            if self.known_pending == 0 {
                return Outcome::Linearizable;
            }
            if let Some((i, register)) = self.next_placement(after) {
                if self.explored == max_states {
                    return Outcome::Inconclusive;
                }
                self.explored += 1;
                self.place(i, register);
                after = None;
            } else if let Some(i) = self.undo() {
                after = Some(i);
            } else {
                return Outcome::NotLinearizable;
            }
        }
    }

    /// The first operation after `after` (from the first if `None`) that
    /// may come next, fits the register and leads to a state not
    /// dominated by one reached before (which is then recorded), with the
    /// register after it. Operations of known outcome are tried first,
    /// then those of unknown outcome, each in call order: the states with
    /// the fewest unknown operations placed come first, and dominate
    /// those found later.
    fn next_placement(&mut self, after: Option<usize>) -> Option<(usize, Option<i64>)> {
        let (known_start, unknown_start) = match after {
            None => (0, 0),
            Some(i) if self.entries[i].known() => (i + 1, 0),
            Some(i) => (self.entries.len(), i + 1),
        };
        let deadline = self.earliest_return();
        let called = |i: &&usize| self.entries[**i].op.call <= deadline;
        let first_refusal = self.first_refusal();
        let found = self
            .pending_known
            .range(known_start..)
            .take_while(called)
            .chain(
                self.pending_unknown
                    .range(unknown_start..)
                    .take_while(called),
            )
            .find_map(|&i| self.new_state(i, first_refusal));
        let (i, known, unknown, register) = found?;
        self.memo.record(known, unknown, register);
        Some((i, register))
    }

    /// The state placing operation `i` next leads to (its index, the
    /// operations placed, the register), unless the operation does not
    /// fit the register, need not be placed here, or the state is
    /// dominated by one reached before.
    fn new_state(
        &self,
        i: usize,
        first_refusal: Option<u64>,
    ) -> Option<(usize, KnownKey, Vec<u64>, Option<i64>)> {
        let entry = &self.entries[i];
        let register = step(self.register, entry.op)?;
        let (known, unknown) = if entry.known() {
            (Some(entry.slot), None)
        } else if self.may_matter(i, register, first_refusal) {
            (None, Some(entry.slot))
        } else {
            return None;
        };
        let known = known_key(self.placed_known.words_with(known));
        let unknown = self.placed_unknown.words_with(unknown);
        (!self.memo.dominated(&known, &unknown, register)).then_some((i, known, unknown, register))
    }

    /// Whether placing operation `i`, of unknown outcome, here, leaving
    /// the register at `value`, may be needed: only if it changes the
    /// register, and an operation that touches `value` (see [`touched`])
    /// or a CAS that did not apply and expected the register's present
    /// value may come before any other pending operation of known outcome
    /// that reads or sets the register (see [`is_decider`]) must.
    ///
    /// Otherwise take a linearization that places it here. Up to the
    /// register's next change, the operations after it are CAS that did
    /// not apply and expected neither value, and unknown CAS that do not
    /// apply (a read, an applied CAS or a write of `value` would touch
    /// it; any other read or applied CAS would fail; a write ends the
    /// stretch). Leaving the operation out (it may never have taken
    /// effect), and those unknown CAS too, is then a linearization as
    /// well: the search loses nothing by skipping this placement.
    ///
    /// `first_refusal` is the earliest call of a pending CAS that did not
    /// apply and expected the register's value ([`Search::first_refusal`]).
    fn may_matter(&self, i: usize, value: Option<i64>, first_refusal: Option<u64>) -> bool {
        if value == self.register {
            return false;
        }
        let touching = self.touching.get(&value).map_or(&[][..], Vec::as_slice);
        // The list is in call order: the first pending is called first.
        let first_touch = touching
            .iter()
            .find(|&&j| j != i && self.is_pending(j))
            .map(|&j| self.entries[j].op.call);
        let Some(first) = first_touch.into_iter().chain(first_refusal).min() else {
            return false;
        };
        let deadline = self
            .deciders_by_ret
            .iter()
            .find(|(_, j)| touching.binary_search(j).is_err())
            .map_or(u64::MAX, |&(ret, _)| ret);
        first <= deadline
    }

    /// The earliest call of a pending CAS that did not apply and expected
    /// the register's value.
    fn first_refusal(&self) -> Option<u64> {
        let refusing = self.refusing.get(&self.register)?;
        let first = refusing
            .iter()
            .find(|&&j| self.pending_known.contains(&j))?;
        Some(self.entries[*first].op.call)
    }

    fn is_pending(&self, i: usize) -> bool {
        if self.entries[i].known() {
            self.pending_known.contains(&i)
        } else {
            self.pending_unknown.contains(&i)
        }
    }

    /// The earliest return of an operation not placed: only an operation
    /// called by then may come next.
    fn earliest_return(&self) -> u64 {
        self.by_ret.first().map_or(u64::MAX, |&(ret, _)| ret)
    }

    fn place(&mut self, i: usize, register: Option<i64>) {
        let entry = &self.entries[i];
        if entry.known() {
            self.placed_known.insert(entry.slot);
            self.known_pending -= 1;
            self.pending_known.remove(&i);
        } else {
            self.placed_unknown.insert(entry.slot);
            self.pending_unknown.remove(&i);
        }
        self.by_ret.remove(&(entry.ret, i));
        self.deciders_by_ret.remove(&(entry.ret, i));
        self.path.push((i, self.register));
        self.register = register;
        if self.path.len() > self.longest.len() {
            self.longest = self.path.iter().map(|&(i, _)| i).collect();
        }
    }

    /// Undoes the last placement and returns its operation, if any.
    fn undo(&mut self) -> Option<usize> {
        let (i, register) = self.path.pop()?;
        let entry = &self.entries[i];
        if entry.known() {
            self.placed_known.remove(entry.slot);
            self.known_pending += 1;
            self.pending_known.insert(i);
        } else {
            self.placed_unknown.remove(entry.slot);
            self.pending_unknown.insert(i);
        }
        self.by_ret.insert((entry.ret, i));
        if is_decider(entry) {
            self.deciders_by_ret.insert((entry.ret, i));
        }
        self.register = register;
        Some(i)
    }
}

/// Whether an operation is of known outcome and not a CAS that did not
/// apply: one that reads or sets the register for sure.
fn is_decider(entry: &Entry<'_>) -> bool {
    entry.known() && entry.op.result != OpResult::Applied(false)
}

/// The values an operation may read or set: what a read returned, what
/// a CAS expected, what a write or a CAS sets.
fn touched(entry: &Entry<'_>) -> Vec<Option<i64>> {
    match (entry.op.op, entry.op.result) {
        (Op::Read, OpResult::Value(read)) => vec![read],
        (Op::Read, _) => Vec::new(),
        (Op::Write(new), _) => vec![Some(new)],
        (Op::Cas { expected, new }, _) => vec![expected, Some(new)],
    }
}

/// For each value, the operations (positions, in call order) that
/// `values` gives it for.
fn index_by_value(
    entries: &[Entry<'_>],
    values: impl Fn(&Entry<'_>) -> Vec<Option<i64>>,
) -> BTreeMap<Option<i64>, Vec<usize>> {
    let mut index: BTreeMap<Option<i64>, Vec<usize>> = BTreeMap::new();
    for (i, entry) in entries.iter().enumerate() {
        for value in values(entry) {
            let list = index.entry(value).or_default();
            if list.last() != Some(&i) {
                list.push(i);
            }
        }
    }
    index
}

/// Describes where the search got stuck: the longest linearizable
/// prefix it found, the register after it, and the operations of known
/// outcome that could come next, none of which leads to a
/// linearization (those of unknown outcome, which could always come
/// next, are only counted).
fn explain(entries: &[Entry<'_>], longest: &[usize]) -> String {
    let mut register = None;
    for &i in longest {
        register = step(register, entries[i].op).expect("the path was linearizable");
    }
    let placed: BTreeSet<usize> = longest.iter().copied().collect();
    let rest: Vec<&Entry<'_>> = (0..entries.len())
        .filter(|i| !placed.contains(i))
        .map(|i| &entries[i])
        .collect();
    let deadline = rest.iter().map(|e| e.ret).min().unwrap_or(u64::MAX);
    let next: Vec<&Entry<'_>> = rest
        .iter()
        .copied()
        .filter(|e| e.known() && e.op.call <= deadline)
        .collect();
    let unknown = rest.iter().filter(|e| !e.known()).count();
    let tail_start = longest.len().saturating_sub(LISTED_MAX);
    let tail: Vec<&Entry<'_>> = longest[tail_start..].iter().map(|&i| &entries[i]).collect();
    format!(
        "the longest linearizable prefix found holds {} of {} operations, ends \
         [{}] and leaves the register at {register:?}; no operation that may \
         come next leads to a linearization: [{}] (nor any of the {unknown} \
         pending of unknown outcome)",
        longest.len(),
        entries.len(),
        list(&tail),
        list(&next)
    )
}

/// The first [`LISTED_MAX`] entries, separated by semicolons, and how
/// many more there are.
fn list(entries: &[&Entry<'_>]) -> String {
    let mut text = entries
        .iter()
        .take(LISTED_MAX)
        .map(|e| e.to_string())
        .collect::<Vec<_>>()
        .join("; ");
    if entries.len() > LISTED_MAX {
        text.push_str(&format!("; and {} more", entries.len() - LISTED_MAX));
    }
    text
}

#[cfg(test)]
mod tests {
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
    fn execute(
        registers: &mut BTreeMap<u64, Option<i64>>,
        key: u64,
        op: Op,
        fate: Fate,
    ) -> OpResult {
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
        let known_left =
            |placed: &[bool], j: usize| !placed[j] && ops[j].result != OpResult::Unknown;
        if !(0..ops.len()).any(|j| known_left(placed, j)) {
            return true;
        }
        for i in 0..ops.len() {
            let must_wait =
                (0..ops.len()).any(|j| known_left(placed, j) && ops[j].ret < ops[i].call);
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
}
