//! The pieces of the ring a scanned token range crosses, each held by the
//! replicas of the ring token that ends it.

use varve_types::data::TokenBound;

/// The pieces of the ring between `start` and `end` in token order, each
/// with its bounds and the ring token whose replicas hold it: `[min, t0]`,
/// then `(t0, t1]`, ..., `(tn, max]` (held as `[min, t0]` is).
pub(crate) fn pieces(
    ends: &[i64],
    start: &TokenBound,
    end: &TokenBound,
) -> Vec<(TokenBound, TokenBound, i64)> {
    let Some(&first) = ends.first() else {
        return vec![(start.clone(), end.clone(), 0)];
    };
    let mut ring: Vec<(Option<i64>, Option<i64>, i64)> = vec![(None, Some(first), first)];
    ring.extend(ends.windows(2).map(|w| (Some(w[0]), Some(w[1]), w[1])));
    ring.push((ends.last().copied(), None, first));
    let (from, to) = (start_token(start), end_token(end));
    let mut out = Vec::new();
    for (lo, hi, owner) in ring {
        let past = |h: i64| match start {
            TokenBound::TokenExclusive(t) => h <= *t,
            _ => i128::from(h) < from,
        };
        if hi.is_some_and(past) {
            continue;
        }
        if lo.is_some_and(|l| i128::from(l) >= to) {
            break;
        }
        let piece_start = match lo {
            Some(l) if from <= i128::from(l) => TokenBound::TokenExclusive(l),
            _ => start.clone(),
        };
        let piece_end = match hi {
            Some(h) if to > i128::from(h) => TokenBound::TokenInclusive(h),
            _ => end.clone(),
        };
        out.push((piece_start, piece_end, owner));
    }
    out
}

/// Where a start bound begins, as a token (below every token: unbounded).
fn start_token(b: &TokenBound) -> i128 {
    match b {
        TokenBound::Unbounded => i128::MIN,
        TokenBound::TokenInclusive(t) | TokenBound::TokenExclusive(t) => i128::from(*t),
        TokenBound::AfterKey(k) => i128::from(k.token),
    }
}

/// Where an end bound ends, as a token (above every token: unbounded).
fn end_token(b: &TokenBound) -> i128 {
    match b {
        TokenBound::Unbounded => i128::MAX,
        TokenBound::TokenInclusive(t) | TokenBound::TokenExclusive(t) => i128::from(*t),
        TokenBound::AfterKey(k) => i128::from(k.token),
    }
}
