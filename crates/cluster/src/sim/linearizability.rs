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
mod tests;
