//! Position strategies: how a position is chosen between two neighbours, and how a run
//! of items is spread when there is no room.

use std::fmt::Debug;

use crate::error::Error;
use crate::key::Alphabet;
use crate::position::{MAX_POSITION, MIN_POSITION, Position, PositionKind};

/// How [`PositionStrategy::spread`] should judge a run of positions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SpreadMode {
    /// A relabel window: accept only if the window is sparse enough that the next
    /// inserts into it are cheap (the density threshold of list labelling).
    Window,
    /// Accept any spread that fits between the bounds.
    Fit,
}

/// Positions for a run of `n` items, in order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Spread {
    /// `first, first + step, first + 2 * step, ...`: executed as one set-based
    /// statement that ranks the rows in SQL.
    Arithmetic {
        /// The first position.
        first: i64,
        /// The distance between consecutive positions (at least 1).
        step: i64,
    },
    /// Explicit positions, written in chunked `CASE` statements.
    Explicit(Vec<Position>),
}

impl Spread {
    /// The `i`-th position of the run.
    pub fn nth(&self, i: u64) -> Option<Position> {
        match self {
            Spread::Arithmetic { first, step } => i64::try_from(i)
                .ok()
                .and_then(|i| i.checked_mul(*step))
                .and_then(|o| o.checked_add(*first))
                .map(Position::Int),
            Spread::Explicit(v) => usize::try_from(i).ok().and_then(|i| v.get(i).cloned()),
        }
    }
}

/// A way of assigning positions. Implement it to add your own; the planner only relies
/// on the documented contract of each method.
///
/// # Invariants
/// Implementations must guarantee, for every input they accept:
/// - [`between`](Self::between) returns a position strictly between the bounds, or
///   `Ok(None)` when there is no room (never a panic, never an out-of-domain value);
/// - [`spread`](Self::spread) returns `n` strictly increasing positions strictly between
///   the bounds, or `Ok(None)` when they do not fit (or, in [`SpreadMode::Window`], when
///   the window is too dense);
/// - every position returned passes [`check`](Self::check).
pub trait PositionStrategy: Debug + Send + Sync {
    /// What the column stores.
    fn kind(&self) -> PositionKind;
    /// Whether `p` is a valid live position of this strategy.
    fn check(&self, p: &Position) -> Result<(), Error>;
    /// A position strictly between `lo` and `hi` (`None`: the list's start or end), or
    /// `Ok(None)` when no position fits.
    fn between(
        &self,
        lo: Option<&Position>,
        hi: Option<&Position>,
    ) -> Result<Option<Position>, Error>;
    /// `n` positions strictly between `lo` and `hi`, or `Ok(None)`.
    fn spread(
        &self,
        lo: Option<&Position>,
        hi: Option<&Position>,
        n: u64,
        mode: SpreadMode,
    ) -> Result<Option<Spread>, Error>;
    /// Dense strategies keep positions `0..n` and shift rows instead of finding gaps.
    fn is_dense(&self) -> bool {
        false
    }
}

fn int_of(p: Option<&Position>, s: &dyn PositionStrategy) -> Result<Option<i64>, Error> {
    match p {
        None => Ok(None),
        Some(p) => {
            s.check(p)?;
            Ok(p.as_int())
        }
    }
}

/// Gapped integers: positions in `[1, 2^62 - 1]`, `spacing` apart when appended, a
/// midpoint when inserted between two items, [`front_step`](Gapped::front_step) below the
/// first item when placed at the start (the end has room up to `2^62`, the start only as
/// much as the first position).
///
/// # Invariants
/// - Every position is inside `[MIN_POSITION, MAX_POSITION]`, so negating it into the
///   temporary range, differences and midpoints never overflow; all arithmetic is
///   checked.
/// - "No room" is `Ok(None)`, never a panic.
/// - In [`SpreadMode::Window`] a run of `n` positions over a span `s` is accepted only if
///   its step is at least 2 and `n <= s^(1 - log2 density)`: the density threshold that
///   makes a relabel window grow geometrically until it is sparse enough (list labelling,
///   Bender et al. 2002), so that a hot gap costs amortized polylogarithmic rows per
///   insert instead of the whole collection. A window that starts at the first item is
///   instead packed `front_step` apart against its upper bound, and accepted when that
///   takes at most a quarter of the room below it, so that the start has room again.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Gapped {
    spacing: i64,
    exponent: f64,
}

impl Gapped {
    /// Spacing 1024, density threshold base `sqrt(2)`: a window of `n` items over a span
    /// `s` is accepted when `n <= sqrt(s)`.
    pub const DEFAULT: Gapped = Gapped::new(1024);

    /// Gapped integers `spacing` apart (clamped to `2..=2^40`).
    pub const fn new(spacing: i64) -> Gapped {
        let spacing = if spacing < 2 {
            2
        } else if spacing > 1 << 40 {
            1 << 40
        } else {
            spacing
        };
        Gapped {
            spacing,
            exponent: 0.5,
        }
    }

    /// Sets the density threshold base `t` (between 1 and 2, exclusive; clamped): a
    /// window over a span `s` may hold `s^(1 - log2 t)` items. Larger values relabel
    /// larger windows less often (fewer rows amortized, a larger worst case); the
    /// default `sqrt(2)` measured 3.7 rows per insert on a 100,000-insert hot gap in the
    /// middle of a 100,000-item list, against 4,546 for whole-list relabels.
    pub fn with_density(mut self, t: f64) -> Gapped {
        let t = if t.is_finite() {
            t.clamp(1.01, 1.99)
        } else {
            std::f64::consts::SQRT_2
        };
        self.exponent = 1.0 - t.log2();
        self
    }

    /// The spacing between appended items.
    pub const fn spacing(&self) -> i64 {
        self.spacing
    }

    /// How far below the first item an item placed at the start of a list goes (midpoints
    /// once that no longer fits), and how far apart a relabel at the start packs items: a
    /// thirty-second of the spacing (32 for the default), at least 2. The start has only
    /// as much room as the first position (`spacing` after a rebalance), so it is spent in
    /// small even steps instead of the spacing or halvings.
    pub const fn front_step(&self) -> i64 {
        let g = self.spacing / 32;
        if g < 2 { 2 } else { g }
    }
}

impl Default for Gapped {
    fn default() -> Self {
        Self::DEFAULT
    }
}

impl PositionStrategy for Gapped {
    fn kind(&self) -> PositionKind {
        PositionKind::Integer
    }

    fn check(&self, p: &Position) -> Result<(), Error> {
        match p {
            Position::Int(v) if (MIN_POSITION..=MAX_POSITION).contains(v) => Ok(()),
            Position::Int(_) => Err(Error::InvalidPosition {
                position: p.clone(),
                reason: "outside the gapped domain [1, 2^62 - 1]",
            }),
            Position::Key(_) => Err(Error::InvalidPosition {
                position: p.clone(),
                reason: "a key where an integer was expected",
            }),
        }
    }

    fn between(
        &self,
        lo: Option<&Position>,
        hi: Option<&Position>,
    ) -> Result<Option<Position>, Error> {
        let (lo, hi) = (int_of(lo, self)?, int_of(hi, self)?);
        let s = self.spacing;
        let p = match (lo, hi) {
            (None, None) => Some(s),
            (Some(a), None) => match a.checked_add(s) {
                Some(p) if p <= MAX_POSITION => Some(p),
                _ => mid(a, MAX_POSITION + 1),
            },
            // the start is the one end with little room (a rebalance starts at `spacing`):
            // below the first item step by the front step while it fits, then halve
            (None, Some(b)) => match b.checked_sub(self.front_step()) {
                Some(p) if p >= MIN_POSITION => Some(p),
                _ => mid(MIN_POSITION - 1, b),
            },
            (Some(a), Some(b)) if a < b => mid(a, b),
            (Some(_), Some(_)) => None,
        };
        Ok(p.map(Position::Int))
    }

    fn spread(
        &self,
        lo: Option<&Position>,
        hi: Option<&Position>,
        n: u64,
        mode: SpreadMode,
    ) -> Result<Option<Spread>, Error> {
        let (lo_v, hi_v) = (int_of(lo, self)?, int_of(hi, self)?);
        let Ok(n) = i64::try_from(n) else {
            return Ok(None);
        };
        if n == 0 {
            return Ok(Some(Spread::Arithmetic {
                first: lo_v.unwrap_or(0).saturating_add(1),
                step: 1,
            }));
        }
        let slots = n.saturating_add(1);
        // A window that starts at the first item ("move to front" runs out of room there):
        // pack it `front_step` apart against `hi`, accepted only when it takes at most a
        // quarter of the room below `hi`. The three quarters left free at the start take
        // three times as many moves to the front (stepping by the same amount) as the
        // relabel wrote rows, instead of the ten halvings of the first gap the even spread
        // gave (10,000 moves to the front of 100,000 items: 1.2 rows per move, was 11).
        if matches!(mode, SpreadMode::Window)
            && lo_v.is_none()
            && let Some(r) = hi_v
        {
            let g = self.front_step();
            let fits = slots
                .checked_mul(g)
                .and_then(|packed| packed.checked_mul(4))
                .is_some_and(|room| room <= r);
            return Ok(fits.then(|| Spread::Arithmetic {
                first: r - n * g,
                step: g,
            }));
        }
        // the span a window of n items needs to pass the density threshold
        let need = {
            let dense_enough = (n as f64).powf(1.0 / self.exponent).ceil();
            let by_threshold = if dense_enough.is_finite() && dense_enough < MAX_POSITION as f64 {
                (dense_enough as i64).saturating_add(1)
            } else {
                i64::MAX
            };
            by_threshold.max(slots.saturating_mul(2))
        };
        // The whole list: `spacing` apart from `spacing` (the seeds' behaviour), wider
        // when the list is so large that windows at that density could never pass the
        // threshold again.
        let s = self.spacing.max(need / slots);
        if lo_v.is_none()
            && hi_v.is_none()
            && let Some(end) = s.checked_mul(n)
            && end <= MAX_POSITION
        {
            return Ok(Some(Spread::Arithmetic { first: s, step: s }));
        }
        let mut l = lo_v.unwrap_or(MIN_POSITION - 1);
        let mut r = hi_v.unwrap_or(MAX_POSITION + 1);
        // An open end takes the usual spacing, or the span the density threshold needs
        // if that is larger, instead of spreading over the whole free domain.
        let need = need.max(slots.saturating_mul(s));
        if hi_v.is_none() && lo_v.is_some() {
            r = r.min(l.saturating_add(need));
        }
        if lo_v.is_none() && hi_v.is_some() {
            l = l.max(r.saturating_sub(need));
        }
        if r <= l {
            return Ok(None);
        }
        let span = r - l;
        let step = span / slots;
        let ok = match mode {
            SpreadMode::Fit => step >= 1,
            SpreadMode::Window => step >= 2 && (n as f64) <= (span as f64).powf(self.exponent),
        };
        Ok(ok.then_some(Spread::Arithmetic {
            first: l + step,
            step,
        }))
    }
}

fn mid(a: i64, b: i64) -> Option<i64> {
    // a < b, both within [0, 2^62]: no overflow
    (b - a >= 2).then(|| a + (b - a) / 2)
}

/// Dense integers `0..n-1`: the position is the index. Inserting or moving shifts the
/// rows in between, so use it for small lists where a contiguous index matters.
///
/// # Invariants
/// - The positions of a collection are exactly `0..n`; every operation keeps them so.
/// - Shifts are set-based statements; a move rewrites the rows between its two ends.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Dense;

impl PositionStrategy for Dense {
    fn kind(&self) -> PositionKind {
        PositionKind::Integer
    }

    fn check(&self, p: &Position) -> Result<(), Error> {
        match p {
            Position::Int(v) if (0..=MAX_POSITION).contains(v) => Ok(()),
            _ => Err(Error::InvalidPosition {
                position: p.clone(),
                reason: "a dense position is an index in [0, 2^62 - 1]",
            }),
        }
    }

    fn between(
        &self,
        lo: Option<&Position>,
        hi: Option<&Position>,
    ) -> Result<Option<Position>, Error> {
        let (lo, hi) = (int_of(lo, self)?, int_of(hi, self)?);
        Ok(match (lo, hi) {
            (None, None) => Some(Position::Int(0)),
            (Some(a), None) => a.checked_add(1).map(Position::Int),
            _ => None,
        })
    }

    fn spread(
        &self,
        _lo: Option<&Position>,
        _hi: Option<&Position>,
        _n: u64,
        _mode: SpreadMode,
    ) -> Result<Option<Spread>, Error> {
        Ok(Some(Spread::Arithmetic { first: 0, step: 1 }))
    }

    fn is_dense(&self) -> bool {
        true
    }
}

/// Fractional string keys compatible with Rocicorp's `fractional-indexing`, capped at
/// `max_len` bytes (default 64).
///
/// # Invariants
/// - Every key is valid in the alphabet and sorts by raw bytes.
/// - [`between`](PositionStrategy::between) never returns a key longer than `max_len`:
///   past the cap it answers "no room" and the planner re-keys a window.
/// - In [`SpreadMode::Window`] a re-keyed window is accepted only if its longest key is
///   at most half the cap, so that the next inserts into it have room to grow.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Fractional {
    alphabet: Alphabet,
    max_len: usize,
}

impl Fractional {
    /// Base 62, keys of at most 64 bytes.
    pub const DEFAULT: Fractional = Fractional {
        alphabet: Alphabet::BASE62,
        max_len: 64,
    };

    /// Keys in `alphabet` of at most `max_len` bytes (clamped to `8..=255`).
    pub const fn new(alphabet: Alphabet, max_len: usize) -> Fractional {
        let max_len = if max_len < 8 {
            8
        } else if max_len > 255 {
            255
        } else {
            max_len
        };
        Fractional { alphabet, max_len }
    }

    /// The alphabet.
    pub const fn alphabet(&self) -> Alphabet {
        self.alphabet
    }

    /// The cap on key length in bytes.
    pub const fn max_len(&self) -> usize {
        self.max_len
    }

    fn key_of<'p>(&self, p: Option<&'p Position>) -> Result<Option<&'p str>, Error> {
        match p {
            None => Ok(None),
            Some(Position::Key(k)) => {
                self.alphabet.validate(k)?;
                Ok(Some(k))
            }
            Some(p) => Err(Error::InvalidPosition {
                position: p.clone(),
                reason: "an integer where a key was expected",
            }),
        }
    }
}

impl Default for Fractional {
    fn default() -> Self {
        Self::DEFAULT
    }
}

impl PositionStrategy for Fractional {
    fn kind(&self) -> PositionKind {
        PositionKind::Key {
            max_len: self.max_len,
        }
    }

    fn check(&self, p: &Position) -> Result<(), Error> {
        self.key_of(Some(p)).map(|_| ())
    }

    fn between(
        &self,
        lo: Option<&Position>,
        hi: Option<&Position>,
    ) -> Result<Option<Position>, Error> {
        let (a, b) = (self.key_of(lo)?, self.key_of(hi)?);
        match self.alphabet.key_between(a, b) {
            Ok(k) if k.len() <= self.max_len => Ok(Some(Position::Key(k))),
            Ok(_) => Ok(None),
            // the integer head cannot grow or shrink further: no room, relabel
            Err(crate::key::KeyError::CannotIncrement { .. })
            | Err(crate::key::KeyError::CannotDecrement { .. }) => Ok(None),
            Err(e) => Err(e.into()),
        }
    }

    fn spread(
        &self,
        lo: Option<&Position>,
        hi: Option<&Position>,
        n: u64,
        mode: SpreadMode,
    ) -> Result<Option<Spread>, Error> {
        let (a, b) = (self.key_of(lo)?, self.key_of(hi)?);
        let Ok(n) = usize::try_from(n) else {
            return Ok(None);
        };
        let keys = match self.alphabet.n_keys_between(a, b, n) {
            Ok(k) => k,
            Err(crate::key::KeyError::CannotIncrement { .. })
            | Err(crate::key::KeyError::CannotDecrement { .. }) => return Ok(None),
            Err(e) => return Err(e.into()),
        };
        let longest = keys.iter().map(String::len).max().unwrap_or(0);
        let cap = match mode {
            SpreadMode::Window => self.max_len / 2,
            SpreadMode::Fit => self.max_len,
        };
        Ok((longest <= cap)
            .then(|| Spread::Explicit(keys.into_iter().map(Position::Key).collect())))
    }
}

/// What to do when no position fits between two neighbours.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum RebalancePolicy {
    /// Refuse with [`Error::Exhausted`]; the application calls `rebalance` itself.
    Never,
    /// Spread the whole collection evenly (the seeds' behaviour).
    Whole,
    /// Relabel the smallest neighbourhood of the gap that is sparse enough, widening
    /// geometrically (the default).
    #[default]
    Window,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gapped_ends_never_overflow() {
        let g = Gapped::DEFAULT;
        let top = Position::Int(MAX_POSITION - 1);
        let p = g.between(Some(&top), None).unwrap().unwrap();
        assert_eq!(p, Position::Int(MAX_POSITION));
        assert_eq!(
            g.between(Some(&Position::Int(MAX_POSITION)), None).unwrap(),
            None
        );
        let bottom = Position::Int(MIN_POSITION + 1);
        assert_eq!(
            g.between(None, Some(&bottom)).unwrap(),
            Some(Position::Int(1))
        );
        assert_eq!(g.between(None, Some(&Position::Int(1))).unwrap(), None);
        let wide = g
            .between(Some(&Position::Int(1)), Some(&Position::Int(MAX_POSITION)))
            .unwrap()
            .unwrap();
        assert!(wide.as_int().unwrap() > 1);
        assert!(g.between(Some(&Position::Int(0)), None).is_err());
        assert!(g.between(Some(&Position::Int(i64::MAX)), None).is_err());
        assert!(g.between(Some(&Position::Int(i64::MIN)), None).is_err());
        assert!(g.between(Some(&Position::Key("a0".into())), None).is_err());
    }

    #[test]
    fn gapped_window_threshold_grows_with_span() {
        let g = Gapped::DEFAULT;
        let (a, b) = (Position::Int(1000), Position::Int(1010));
        // 8 items in a span of 10: too dense for a window, fine to fit
        assert_eq!(
            g.spread(Some(&a), Some(&b), 8, SpreadMode::Window).unwrap(),
            None
        );
        assert!(
            g.spread(Some(&a), Some(&b), 8, SpreadMode::Fit)
                .unwrap()
                .is_some()
        );
        let c = Position::Int(1000 + 4096);
        assert!(
            g.spread(Some(&a), Some(&c), 8, SpreadMode::Window)
                .unwrap()
                .is_some()
        );
    }

    #[test]
    fn gapped_start_steps_below_the_first_item_and_packs_a_start_window() {
        let g = Gapped::DEFAULT;
        assert_eq!(g.front_step(), 32);
        let at = |b: i64| g.between(None, Some(&Position::Int(b))).unwrap();
        assert_eq!(at(1024), Some(Position::Int(992)));
        assert_eq!(at(32), Some(Position::Int(16)), "then halving");
        assert_eq!(at(1), None);
        // 9 items (and the hole) below 10,000: packed 32 apart against it, the rest free
        let hi = Position::Int(10_000);
        match g.spread(None, Some(&hi), 10, SpreadMode::Window).unwrap() {
            Some(Spread::Arithmetic { first, step }) => {
                assert_eq!((first, step), (10_000 - 10 * 32, 32));
            }
            other => panic!("{other:?}"),
        }
        // too dense: 10 items would take more than a quarter of the room below 1,000
        let hi = Position::Int(1_000);
        assert_eq!(
            g.spread(None, Some(&hi), 10, SpreadMode::Window).unwrap(),
            None
        );
        // the whole list is still spread from `spacing`, `spacing` apart
        assert_eq!(
            g.spread(None, None, 10, SpreadMode::Fit).unwrap(),
            Some(Spread::Arithmetic {
                first: 1024,
                step: 1024
            })
        );
        assert_eq!(Gapped::new(8).front_step(), 2);
    }

    #[test]
    fn fractional_caps_length() {
        let f = Fractional::new(Alphabet::BASE62, 8);
        let a = Position::Key("a0".into());
        let b = Position::Key("a0000001".into());
        assert_eq!(f.between(Some(&a), Some(&b)).unwrap(), None);
        assert!(f.between(Some(&a), None).unwrap().is_some());
        assert!(f.between(Some(&Position::Key("a00".into())), None).is_err());
    }
}
